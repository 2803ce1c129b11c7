//! Each call's JavaScript side: its request, what its caller waits on (a promise, or a
//! synchronous caller about to pick the outcome up), its last attempt's result, and what the
//! caller gets when it ends.

use std::rc::Rc;

use wasm_bindgen::prelude::*;

use super::body;
use super::clock;
use super::errors::{abandoned_error, quota_error, range_error};
use super::headers;
use super::options::Config;
use super::props::get;
use super::replay;
use crate::core::base::slab::Mirror;
use crate::core::gate::action::End;
use crate::core::gates::ids::CallRef;
use crate::core::rules::quota::{probe_url, GIVEN_AGAIN};
use crate::core::Millis;

/// What the caller's promise is.
pub enum Waiter {
    /// The call is being started or concluded synchronously: an admission (its attempt's time
    /// limit) or an end is kept for the caller to pick up before it returns.
    Sync {
        /// The attempt's time limit, once admitted.
        send: Option<Millis>,
        /// What the call came to, once it ended.
        end: Option<Result<JsValue, JsValue>>,
    },
    /// A promise the driver settles: its resolve and reject functions. A call settles by one
    /// call into JavaScript, exactly once, because the call is forgotten as it settles.
    Promise(js_sys::Function, js_sys::Function),
    /// A gate's `/usage` probe: the request to send, if one could be made.
    Probe(Option<(JsValue, JsValue)>),
}

/// What a caller's `fetch(input, init)` brings besides its facts.
pub struct CallArgs {
    /// `fetch`'s arguments.
    pub input: JsValue,
    /// `fetch`'s arguments.
    pub init: JsValue,
    /// The caller's signal.
    pub signal: Option<web_sys::AbortSignal>,
}

/// A call's JavaScript side.
pub struct JsCall {
    /// The request as the caller made it (for a stream body, the copy kept for the next
    /// attempt).
    pub input: JsValue,
    /// The request as the caller made it.
    pub init: JsValue,
    /// The caller's signal.
    pub signal: Option<web_sys::AbortSignal>,
    /// The wrapper's configuration.
    pub config: Rc<Config>,
    /// The last attempt's result: a response, or the inner fetch's rejection.
    pub last: Option<Result<JsValue, JsValue>>,
    /// The last attempt's time limit, for the fast path.
    pub timeout: Millis,
    /// Its body is a stream that each attempt sends a copy of.
    pub split: bool,
    /// Another attempt may follow the one being sent, as the gates said with its `Send`.
    pub again: bool,
    /// What the caller waits on.
    pub waiter: Waiter,
    /// The watch on its signal, while it waits.
    pub watch: Option<u32>,
}

impl JsCall {
    /// A call being started: its caller picks up what it comes to before it returns.
    pub fn new(call: CallArgs, config: &Rc<Config>, split: bool) -> JsCall {
        JsCall {
            input: call.input,
            init: call.init,
            signal: call.signal,
            config: config.clone(),
            last: None,
            timeout: 0.0,
            split,
            again: false,
            waiter: Waiter::Sync {
                send: None,
                end: None,
            },
            watch: None,
        }
    }

    /// A gate's probe, made beside this call's request: `GET /usage` with its credential.
    pub fn probe(&self) -> JsCall {
        let config = self.config.clone();
        let (credential, _, _, request_url) = headers::request(&self.input, &self.init);
        let url = probe_url(config.usage_url.as_deref(), &request_url);
        let request = url.map(|url| {
            let init = headers::usage_init(credential.api_key, credential.authorization);
            (JsValue::from_str(&url), init)
        });
        let nothing = CallArgs {
            input: JsValue::UNDEFINED,
            init: JsValue::UNDEFINED,
            signal: None,
        };
        JsCall {
            waiter: Waiter::Probe(request),
            ..JsCall::new(nothing, &config, false)
        }
    }

    /// Settles the caller's promise with `result`, once: the call is over.
    pub fn settle(self, result: Result<JsValue, JsValue>) {
        if self.split {
            replay::release(&self.input, &self.init);
        }
        // Settling runs no JavaScript of anyone's at once: a promise's reactions wait for a
        // microtask, and a Response or an error is no thenable to be asked for `then`.
        if let Waiter::Promise(resolve, reject) = self.waiter {
            let _ = match result {
                Ok(value) => resolve.call1(&JsValue::UNDEFINED, &value),
                Err(error) => reject.call1(&JsValue::UNDEFINED, &error),
            };
        }
    }
}

/// What a call made or concluded synchronously came to: `Ok(Some(timeout))` when it was
/// admitted and its attempt is the caller's to send, `Ok(None)` when it waits (its promise is
/// the driver's to settle), or its end (the call is forgotten then).
pub fn outcome(
    calls: &mut Mirror<JsCall>,
    call: CallRef,
) -> Result<Option<Millis>, Result<JsValue, JsValue>> {
    let Some(js) = calls.get_mut(call) else {
        return Ok(None);
    };
    match &mut js.waiter {
        Waiter::Sync { end: Some(_), .. } => {
            let Some(JsCall {
                waiter: Waiter::Sync { end: Some(end), .. },
                split,
                input,
                init,
                ..
            }) = calls.remove(call)
            else {
                return Ok(None);
            };
            if split {
                replay::release(&input, &init);
            }
            Err(end)
        }
        Waiter::Sync { send, .. } => match send.take() {
            Some(timeout) => {
                js.timeout = timeout;
                Ok(Some(timeout))
            }
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The last response of `call`, if its last attempt had one.
pub fn last_response(calls: &Mirror<JsCall>, call: CallRef) -> Option<JsValue> {
    match calls.get(call)?.last.as_ref()? {
        Ok(response) => Some(response.clone()),
        Err(_) => None,
    }
}

/// What the caller of `call` gets for `end`; `answer` is the spent quota's answer, kept, when
/// the gate gives it again.
pub fn result(
    calls: &mut Mirror<JsCall>,
    call: CallRef,
    end: End,
    answer: Option<JsValue>,
) -> Result<JsValue, JsValue> {
    let last = calls.get_mut(call).and_then(|js| js.last.take());
    match end {
        End::Deliver => last.unwrap_or(Ok(JsValue::UNDEFINED)),
        End::Abandoned { as_is: true, .. } => last.unwrap_or(Ok(JsValue::UNDEFINED)),
        End::Abandoned {
            abandoned, cause, ..
        } => {
            let cause = last.and_then(Result::err).filter(|_| cause);
            Err(abandoned_error(abandoned, cause))
        }
        End::Exhausted { .. } if answer.is_some() => {
            if let Some(Ok(response)) = &last {
                body::cancel(&get(response, "body"));
            }
            Ok(answer.map_or(JsValue::UNDEFINED, |a| body::give_again(&a, GIVEN_AGAIN)))
        }
        End::Exhausted { until } => Err(quota_error(until.map(clock::to_wall))),
        End::RetryAfterTooLarge => {
            if let Some(Ok(response)) = &last {
                body::cancel(&get(response, "body"));
            }
            Err(range_error("Retry-After exceeds the supported delay"))
        }
    }
}
