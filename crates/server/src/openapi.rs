//! The route table and the OpenAPI document made from it. Every route is
//! registered through [`Routes`], which mounts the handler and records the
//! operation, so `GET /v3/openapi.json` cannot miss or invent an endpoint.

use crate::state::AppState;
use axum::Router;
use axum::handler::Handler;
use axum::routing::{MethodFilter, MethodRouter, on};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// One documented operation.
#[derive(Debug, Clone)]
pub struct Operation {
    pub method: &'static str,
    pub path: &'static str,
    pub summary: &'static str,
    pub tag: &'static str,
}

/// Routes of one resource, with their documentation.
pub struct Routes {
    tag: &'static str,
    methods: BTreeMap<&'static str, MethodRouter<AppState>>,
    ops: Vec<Operation>,
}

impl Routes {
    pub fn new(tag: &'static str) -> Self {
        Routes {
            tag,
            methods: BTreeMap::new(),
            ops: Vec::new(),
        }
    }

    fn add<H, T>(
        mut self,
        filter: MethodFilter,
        method: &'static str,
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let route = self.methods.remove(path).unwrap_or_default();
        self.methods.insert(path, route.merge(on(filter, handler)));
        self.ops.push(Operation {
            method,
            path,
            summary,
            tag: self.tag,
        });
        self
    }

    pub fn get<H: Handler<T, AppState>, T: 'static>(
        self,
        path: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        self.add(MethodFilter::GET, "get", path, summary, h)
    }
    pub fn post<H: Handler<T, AppState>, T: 'static>(
        self,
        path: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        self.add(MethodFilter::POST, "post", path, summary, h)
    }
    pub fn put<H: Handler<T, AppState>, T: 'static>(
        self,
        path: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        self.add(MethodFilter::PUT, "put", path, summary, h)
    }
    pub fn delete<H: Handler<T, AppState>, T: 'static>(
        self,
        path: &'static str,
        summary: &'static str,
        h: H,
    ) -> Self {
        self.add(MethodFilter::DELETE, "delete", path, summary, h)
    }

    /// A path that is not served (the extensions under `serve --spec-only`):
    /// every method answers 404, as an unknown path does, not the 405 that
    /// a neighbouring `{id}` route would give it. Not documented.
    pub fn absent(mut self, path: &'static str) -> Self {
        let not_found = || async { crate::error::ApiError::not_found("no such endpoint") };
        self.methods.insert(path, axum::routing::any(not_found));
        self
    }

    /// The routes of several resources together.
    pub fn merge(mut self, other: Routes) -> Self {
        for (path, route) in other.methods {
            let mine = self.methods.remove(path).unwrap_or_default();
            self.methods.insert(path, mine.merge(route));
        }
        self.ops.extend(other.ops);
        self
    }

    pub fn operations(&self) -> &[Operation] {
        &self.ops
    }

    /// The axum router and the documented operations.
    pub fn into_parts(self) -> (Router<AppState>, Vec<Operation>) {
        let router = self
            .methods
            .into_iter()
            .fold(Router::new(), |r, (path, route)| r.route(path, route));
        (router, self.ops)
    }
}

/// The OpenAPI 3.0 document of `ops`.
pub fn document(ops: &[Operation]) -> Value {
    let mut paths: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for op in ops {
        let params: Vec<Value> = op
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        let mut responses = json!({
            "200": {"description": "success (JSON or XML)"},
            "400": {"description": "bad input", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
            "404": {"description": "not found in this account", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        });
        let protected = op.path.starts_with("/v3/");
        if protected {
            responses["401"] = json!({"description": "missing, unknown or expired token"});
        }
        let mut entry = json!({
            "summary": op.summary,
            "tags": [op.tag],
            "operationId": format!("{}_{}", op.method, op.path.trim_matches('/').replace(['/', '{', '}', '.'], "_")),
            "parameters": params,
            "responses": responses,
        });
        if !protected {
            entry["security"] = json!([]);
        }
        paths
            .entry(op.path)
            .or_default()
            .insert(op.method.to_string(), entry);
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "listpipe built-in target: email-marketing REST API v3",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Generated from the server's route table. Bodies are JSON or XML; paths may carry .json or .xml suffixes."
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {
                "code": {"type": "integer"}, "message": {"type": "string"}}}}}}
        },
        "paths": paths,
    })
}
