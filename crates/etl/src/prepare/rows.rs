//! Reading prepared rows back as the receiver bodies they become: the one
//! place that knows the prepared frame's layout (see [`col`](super::col)).

use super::{col, tags};
use crate::pipeline::{ImportStep, ReceiverField};
use crate::source::{FILE_COL, ROW_COL};
use listpipe_api::{Order, ReceiverInput};
use polars::prelude::*;
use std::collections::BTreeMap;

/// The prepared frame's columns, borrowed once for row access.
pub struct PreparedRows<'a> {
    rows: &'a UInt32Chunked,
    files: &'a UInt32Chunked,
    fields: Vec<(ReceiverField, &'a StringChunked)>,
    globals: Vec<(String, &'a StringChunked)>,
    locals: Vec<(String, &'a StringChunked)>,
    tags: Option<&'a StringChunked>,
}

impl<'a> PreparedRows<'a> {
    pub fn new(step: &ImportStep, frame: &'a DataFrame) -> PolarsResult<Self> {
        let s = |name: &str| frame.column(name).and_then(|c| c.str());
        Ok(PreparedRows {
            rows: frame.column(ROW_COL)?.u32()?,
            files: frame.column(FILE_COL)?.u32()?,
            fields: step
                .fields
                .iter()
                .map(|(f, _)| Ok((*f, s(&col::field(*f))?)))
                .collect::<PolarsResult<_>>()?,
            globals: step
                .global_attributes
                .iter()
                .map(|a| Ok((a.name.clone(), s(&col::global(&a.name))?)))
                .collect::<PolarsResult<_>>()?,
            locals: step
                .attributes
                .iter()
                .map(|a| Ok((a.name.clone(), s(&col::group(&a.name))?)))
                .collect::<PolarsResult<_>>()?,
            tags: if step.tags.is_some() {
                Some(s(col::TAGS)?)
            } else {
                None
            },
        })
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn row_number(&self, i: usize) -> u64 {
        self.rows.get(i).unwrap_or(0) as u64
    }

    pub fn file(&self, i: usize) -> u32 {
        self.files.get(i).unwrap_or(0)
    }

    pub fn email(&self, i: usize) -> String {
        self.fields
            .iter()
            .find(|(f, _)| *f == ReceiverField::Email)
            .and_then(|(_, c)| c.get(i))
            .unwrap_or("")
            .to_string()
    }

    /// The receiver body of row `i`.
    pub fn input(&self, i: usize, orders: Option<Vec<Order>>) -> ReceiverInput {
        let mut r = ReceiverInput::default();
        for (field, c) in &self.fields {
            let Some(v) = c.get(i) else { continue };
            let int = || v.parse::<i64>().ok();
            match field {
                ReceiverField::Email => r.email = Some(v.to_string()),
                ReceiverField::Registered => r.registered = int(),
                ReceiverField::Activated => r.activated = int(),
                ReceiverField::Deactivated => r.deactivated = int(),
                ReceiverField::Imported => r.imported = int(),
                ReceiverField::Bounced => r.bounced = int(),
                ReceiverField::Points => r.points = int(),
                ReceiverField::Source => r.source = Some(v.to_string()),
                ReceiverField::LastIp => r.last_ip = Some(v.to_string()),
                ReceiverField::LastLocation => r.last_location = Some(v.to_string()),
                ReceiverField::LastClient => r.last_client = Some(v.to_string()),
            }
        }
        let values = |cols: &[(String, &StringChunked)]| -> Option<BTreeMap<String, String>> {
            let map: BTreeMap<_, _> = cols
                .iter()
                .filter_map(|(n, c)| c.get(i).map(|v| (n.clone(), v.to_string())))
                .collect();
            (!map.is_empty()).then_some(map)
        };
        r.global_attributes = values(&self.globals);
        r.attributes = values(&self.locals);
        r.tags = self
            .tags
            .and_then(|c| c.get(i))
            .map(|t| t.split(tags::JOIN).map(str::to_string).collect());
        r.orders = orders;
        r
    }
}
