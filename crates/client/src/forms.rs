//! Forms (spec §4.5, deprecated) and the built-in server's outbox of
//! double-opt-in mails (a listpipe extension).

use super::{ApiClient, Result};
use listpipe_api::Id;
use listpipe_api::form::{
    Form, FormCodeQuery, FormExtraData, FormSendInput, FormTemplateInput, OutboxMail, OutboxQuery,
};
use listpipe_api::paths::{self, fill};

impl ApiClient {
    pub async fn forms(&self) -> Result<Vec<Form>> {
        self.get(paths::FORMS, &[]).await
    }
    pub async fn form(&self, id: Id) -> Result<Form> {
        self.get(&fill(paths::FORM, &[&id.to_string()]), &[]).await
    }
    pub async fn delete_form(&self, id: Id) -> Result<bool> {
        self.delete(&fill(paths::FORM, &[&id.to_string()]), &[])
            .await
    }
    pub async fn group_forms(&self, group: Id) -> Result<Vec<Form>> {
        self.get(&fill(paths::GROUP_FORMS, &[&group.to_string()]), &[])
            .await
    }
    /// The embed code: HTML of a form that signs up to the form's group.
    pub async fn form_code(&self, id: Id, query: &FormCodeQuery) -> Result<String> {
        self.get(
            &fill(paths::FORM_CODE, &[&id.to_string()]),
            &query.to_pairs(),
        )
        .await
    }
    /// `template`: `default` (the only one).
    pub async fn create_form_from_template(
        &self,
        group: Id,
        template: &str,
        extradata: &FormExtraData,
    ) -> Result<Form> {
        let body = FormTemplateInput {
            extradata: Some(extradata.clone()),
        };
        self.post(
            &fill(paths::FORM_FROM_TEMPLATE, &[&group.to_string(), template]),
            &body,
        )
        .await
    }
    /// `kind`: `activate` or `deactivate`.
    pub async fn send_form_mail(
        &self,
        form: Id,
        kind: &str,
        input: &FormSendInput,
    ) -> Result<bool> {
        self.post(&fill(paths::FORM_SEND, &[&form.to_string(), kind]), input)
            .await
    }
    /// The double-opt-in mails the built-in server wrote, newest first.
    pub async fn outbox(&self, query: &OutboxQuery) -> Result<Vec<OutboxMail>> {
        self.get(paths::OUTBOX, &query.to_pairs()).await
    }
}
