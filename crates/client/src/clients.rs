//! Clients (spec §4.2): the account's own client records.

use super::{ApiClient, Result};
use listpipe_api::Id;
use listpipe_api::client_info::{
    ClientInfo, ClientLimit, ClientList, ClientUser, InvoiceAddress, Plan,
};
use listpipe_api::paths::{self, fill};

impl ApiClient {
    /// One page of clients (`pagesize` default 50, `page` from 0). The
    /// server answers a single client as an object; this always gives a list.
    pub async fn clients(
        &self,
        pagesize: Option<i64>,
        page: Option<i64>,
    ) -> Result<Vec<ClientInfo>> {
        let q: Vec<_> = [("pagesize", pagesize), ("page", page)]
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v.to_string())))
            .collect();
        let list: ClientList = self.get(paths::CLIENTS, &q).await?;
        Ok(list.into_vec())
    }
    pub async fn client(&self, id: Id) -> Result<ClientInfo> {
        self.get(&fill(paths::CLIENT, &[&id.to_string()]), &[])
            .await
    }
    pub async fn client_by_domain(&self, domain: &str) -> Result<ClientInfo> {
        self.get(&fill(paths::CLIENT_BY_DOMAIN, &[domain]), &[])
            .await
    }
    pub async fn client_plan(&self, id: Id) -> Result<Plan> {
        self.get(&fill(paths::CLIENT_PLAN, &[&id.to_string()]), &[])
            .await
    }
    pub async fn client_limits(&self, id: Id) -> Result<Vec<ClientLimit>> {
        self.get(&fill(paths::CLIENT_LIMITS, &[&id.to_string()]), &[])
            .await
    }
    pub async fn client_invoice_address(&self, id: Id) -> Result<InvoiceAddress> {
        self.get(
            &fill(paths::CLIENT_INVOICE_ADDRESS, &[&id.to_string()]),
            &[],
        )
        .await
    }
    /// Unix seconds.
    pub async fn client_next_invoice_date(&self, id: Id) -> Result<i64> {
        self.get(
            &fill(paths::CLIENT_NEXT_INVOICE_DATE, &[&id.to_string()]),
            &[],
        )
        .await
    }
    pub async fn client_contingent(&self, id: Id) -> Result<i64> {
        self.get(&fill(paths::CLIENT_CONTINGENT, &[&id.to_string()]), &[])
            .await
    }
    pub async fn client_receiver_count(&self, id: Id) -> Result<i64> {
        self.get(&fill(paths::CLIENT_RECEIVER_COUNT, &[&id.to_string()]), &[])
            .await
    }
    pub async fn client_active_receiver_count(&self, id: Id) -> Result<i64> {
        self.get(
            &fill(paths::CLIENT_ACTIVE_RECEIVER_COUNT, &[&id.to_string()]),
            &[],
        )
        .await
    }
    pub async fn client_users(&self, id: Id) -> Result<Vec<ClientUser>> {
        self.get(&fill(paths::CLIENT_USERS, &[&id.to_string()]), &[])
            .await
    }
}
