//! The one `GET /usage` a gate makes when 429s look like a spent monthly quota: admitted
//! through the gate like any call, with the same credential, its own failure handled (a failed
//! probe confirms nothing), and its answer shared by every call that waited for it.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use super::attempt::{self, Attempted};
use super::clock;
use super::options::Config;
use super::read::{get, set};
use super::shared_gate::SharedGate;
use super::transport::global_fetch;
use crate::core::quota::{QuotaState, Usage};

/// The probe's time limit, from asking the gate to the end of the response.
const PROBE_BUDGET_MS: f64 = 30_000.0;

/// Everything a probe needs; the credential is held only while the probe runs.
pub struct Probe {
    /// The gate whose quota is in question.
    pub gate: Rc<SharedGate>,
    /// The wrapper's configuration (inner fetch, events).
    pub config: Rc<Config>,
    /// Where `/usage` is, if known.
    pub url: Option<String>,
    /// The credential to send, as the calls did.
    pub api_key: Option<String>,
    /// The credential to send, as the calls did.
    pub authorization: Option<String>,
}

impl Probe {
    /// Runs the probe and reports its answer to the gate.
    pub async fn run(self) {
        let usage = self.usage().await;
        let state = self.gate.probe_finished(usage);
        let scope = self.gate.scope().as_str();
        self.config.events.emit("quota-probe", scope, |e| {
            set(
                e,
                "exhausted",
                matches!(state, QuotaState::Exhausted { .. }).into(),
            );
            set(e, "answered", usage.is_some().into());
        });
    }

    async fn usage(&self) -> Option<Usage> {
        let url = self.url.as_ref()?;
        let entry = self.gate.enter(None, clock::now() + PROBE_BUDGET_MS).ok()?;
        let ticket = entry.admitted().await.ok()?;
        let fetch = match &self.config.fetch {
            Some(fetch) => fetch.clone(),
            None => global_fetch().ok()?,
        };
        let headers = js_sys::Object::new();
        set(&headers, "Accept", "application/json".into());
        if let Some(key) = &self.api_key {
            set(&headers, "X-API-Key", key.into());
        }
        if let Some(auth) = &self.authorization {
            set(&headers, "Authorization", auth.into());
        }
        let init = js_sys::Object::new();
        set(&init, "method", "GET".into());
        set(&init, "headers", headers.into());
        let url = JsValue::from_str(url);
        let attempted = attempt::send(&fetch, &url, &init, None, PROBE_BUDGET_MS).await;
        self.gate.responded(ticket);
        let response = match attempted {
            Attempted::Response(response, 200) => response,
            Attempted::Response(response, _) => {
                super::body::discard(&response).await;
                return None;
            }
            _ => return None,
        };
        let json = call_json(&response).await?;
        let now = clock::now();
        let period_end = get(&json, "period_end_utc")
            .as_string()
            .map(|iso| js_sys::Date::parse(&iso))
            .filter(|ms| ms.is_finite())
            .map(|wall| now + (wall - clock::wall_now()));
        Usage::from_fields(|k| get(&json, k).as_f64(), period_end)
    }
}

async fn call_json(response: &JsValue) -> Option<JsValue> {
    let json: js_sys::Function = get(response, "json").dyn_into().ok()?;
    let promise = json.call0(response).ok()?;
    JsFuture::from(js_sys::Promise::resolve(&promise))
        .await
        .ok()
}
