//! The error handlers and listeners that surround a run, and the [`HandlerRegistry`] that resolves
//! a job's `jobErrorHandlerType` and `jobListenerTypes` to them.
//!
//! - [`error`]: an [`ErrorHandler`] sees every failure and returns an [`ErrorAction`]. ElasticJob's
//!   `THROW` rethrows into a scheduler thread; an actor has no such thread, so we chose a verdict
//!   instead of an exception: `LOG` and `IGNORE` return [`ErrorAction::Continue`], `THROW` logs and
//!   returns [`ErrorAction::Escalate`], which the engine reports as an escalated failure in the
//!   run's outcome, its events and its metrics. The schedule goes on either way.
//! - [`listener`]: a [`JobListener`] is called before and after each run with plain data
//!   ([`RunInfo`], [`RunOutcome`]). A panicking listener or error handler never takes the run down:
//!   the panic is caught, logged, and reported to the caller.
//!
//! - [`notify`]: `EMAIL`, `WECHAT`, `DINGTALK` (ElasticJob's) and `WEBHOOK` (ours) log the failure
//!   and send a notice off the run's path, configured by the job's `props`.
//!
//! Handlers are looked up by name from a registry the application fills at start-up, never from a
//! global: the built-ins are always there, user handlers are registered under their own names, and
//! config validation asks the registry which names exist.

pub mod error;
pub mod listener;
pub mod notify;
pub mod once;

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use error::{
    handle_contained, ErrorAction, ErrorHandler, IgnoreErrorHandler, LogErrorHandler,
    ThrowErrorHandler, IGNORE, LOG, THROW,
};
pub use listener::{Hook, JobListener, ListenerPanic, Listeners, RunInfo, RunOutcome};
pub use once::{DistributeOnceListener, GuaranteeInfo, DEFAULT_GUARANTEE_TIMEOUT};

/// Why a handler could not be registered or resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// Resolving `jobErrorHandlerType`: no error handler has that name.
    #[error("no error handler is registered as {name:?}; known: {known:?}")]
    ResolveErrorHandler {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// Resolving `jobListenerTypes`: no listener has that name.
    #[error("no job listener is registered as {name:?}; known: {known:?}")]
    ResolveListener {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// Registering an error handler under a name that is taken (built-in names included).
    #[error("an error handler is already registered as {name:?}")]
    RegisterErrorHandler {
        /// The name that is taken.
        name: String,
    },
    /// Registering a listener under a name that is taken.
    #[error("a job listener is already registered as {name:?}")]
    RegisterListener {
        /// The name that is taken.
        name: String,
    },
}

/// Error handlers and listeners by name.
#[derive(Debug, Clone)]
pub struct HandlerRegistry {
    error_handlers: BTreeMap<String, Arc<dyn ErrorHandler>>,
    listeners: BTreeMap<String, Arc<dyn JobListener>>,
    notifiers: Arc<notify::Notifiers>,
    distribute_once: BTreeMap<String, Arc<dyn DistributeOnceListener>>,
}

impl Default for HandlerRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl HandlerRegistry {
    /// A registry holding the built-in error handlers `LOG`, `IGNORE`, `THROW` and the notifiers
    /// `EMAIL`, `WECHAT`, `DINGTALK` and `WEBHOOK`, and no listener.
    pub fn new() -> Self {
        let notifiers = Arc::new(notify::Notifiers::default());
        let builtins: [(&str, Arc<dyn ErrorHandler>); 3] = [
            (LOG, Arc::new(LogErrorHandler)),
            (IGNORE, Arc::new(IgnoreErrorHandler)),
            (THROW, Arc::new(ThrowErrorHandler)),
        ];
        let mut error_handlers: BTreeMap<String, Arc<dyn ErrorHandler>> = builtins
            .into_iter()
            .map(|(name, handler)| (name.to_owned(), handler))
            .collect();
        for kind in notify::NOTIFIERS {
            let handler = notify::NotifyErrorHandler::new(kind, notifiers.clone());
            error_handlers.insert(kind.to_owned(), Arc::new(handler));
        }
        Self {
            error_handlers,
            listeners: BTreeMap::new(),
            notifiers,
            distribute_once: BTreeMap::new(),
        }
    }

    /// The notifiers' settings per job, their queue and their counts.
    pub fn notifiers(&self) -> &notify::Notifiers {
        &self.notifiers
    }

    /// Registers a user error handler; a taken name is refused rather than silently replaced.
    pub fn register_error_handler(
        &mut self,
        name: impl Into<String>,
        handler: Arc<dyn ErrorHandler>,
    ) -> Result<(), HandlerError> {
        let name = name.into();
        if self.error_handlers.contains_key(&name) {
            return Err(HandlerError::RegisterErrorHandler { name });
        }
        self.error_handlers.insert(name, handler);
        Ok(())
    }

    /// Registers a user listener; a taken name is refused rather than silently replaced.
    pub fn register_listener(
        &mut self,
        name: impl Into<String>,
        listener: Arc<dyn JobListener>,
    ) -> Result<(), HandlerError> {
        let name = name.into();
        if self.listeners.contains_key(&name) || self.distribute_once.contains_key(&name) {
            return Err(HandlerError::RegisterListener { name });
        }
        self.listeners.insert(name, listener);
        Ok(())
    }

    /// The error handler a job names; `None` or an empty name means `LOG`, as in ElasticJob.
    pub fn error_handler(&self, name: Option<&str>) -> Result<Arc<dyn ErrorHandler>, HandlerError> {
        let name = name.map(str::trim).filter(|n| !n.is_empty()).unwrap_or(LOG);
        self.error_handlers
            .get(name)
            .cloned()
            .ok_or_else(|| HandlerError::ResolveErrorHandler {
                name: name.to_owned(),
                known: self.error_handler_names(),
            })
    }

    /// The listeners a job names, in its order; the first unknown name is refused.
    pub fn listeners(&self, names: &[String]) -> Result<Listeners, HandlerError> {
        names
            .iter()
            .filter(|name| !self.distribute_once.contains_key(*name))
            .map(|name| match self.listeners.get(name) {
                Some(listener) => Ok((name.clone(), Arc::clone(listener))),
                None => Err(HandlerError::ResolveListener {
                    name: name.clone(),
                    known: self.listener_names(),
                }),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Listeners::new)
    }

    /// Every error handler name, sorted, for config validation.
    pub fn error_handler_names(&self) -> Vec<String> {
        self.error_handlers.keys().cloned().collect()
    }

    /// Every listener name (distribute-once ones included), sorted, for config validation.
    pub fn listener_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.listeners.keys().cloned().collect();
        names.extend(self.distribute_once.keys().cloned());
        names.sort();
        names
    }

    /// Registers a distribute-once listener under `name`, which a job names in
    /// `jobListenerTypes` like any listener.
    pub fn register_distribute_once_listener(
        &mut self,
        name: impl Into<String>,
        listener: Arc<dyn DistributeOnceListener>,
    ) -> Result<(), HandlerError> {
        let name = name.into();
        if self.listeners.contains_key(&name) || self.distribute_once.contains_key(&name) {
            return Err(HandlerError::RegisterListener { name });
        }
        self.distribute_once.insert(name, listener);
        Ok(())
    }

    /// The distribute-once listeners among `names`, in their order.
    pub fn distribute_once(
        &self,
        names: &[String],
    ) -> Vec<(String, Arc<dyn DistributeOnceListener>)> {
        names
            .iter()
            .filter_map(|n| self.distribute_once.get(n).map(|l| (n.clone(), l.clone())))
            .collect()
    }
}

/// The message of a caught panic: panics carry a `&str` or a `String` unless raised with
/// `panic_any`. Shared by everything that catches one (listeners, item tasks, lane tasks).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::from("(a panic without a message)")
    }
}

#[cfg(test)]
mod tests;
