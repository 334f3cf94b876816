//! SQL rules, IF-THEN triggers, pattern sets and functions on demand (`[rules]`):
//! `fogline_rules::Rules`, its REST routes and live-feed fields handed to the admin API and
//! its counters to `/metrics`. Started after the listeners and before the admin API; stopped before the
//! listeners, each rule writing its last checkpoint and every function instance ended.
//!
//! Functions are kept in `<data_dir>/.rules/functions`. A node that keeps no files
//! (`storage = "memory"`) runs none: it says so once in the log and the function routes
//! answer 501 with the reason, rather than writing modules somewhere unexpected.

use std::sync::Arc;

use fogline_broker::StorageMode;
use fogline_functions::{FunctionStore, Runner};
use fogline_rules::functions::{api, metrics::FunctionsCollector, FunctionService};
use fogline_rules::{Functions, Rules};

use crate::component::{BoxError, BoxFuture, Component, Context, Started};
use crate::config::Config;

pub(crate) const COMPONENT: Component = Component {
    name: "rules",
    start: boxed,
};

fn boxed<'a>(
    cfg: &'a Config,
    ctx: &'a Context,
) -> BoxFuture<'a, Result<Option<Started>, BoxError>> {
    Box::pin(start(cfg, ctx))
}

/// The functions service, or why there is none.
fn functions(cfg: &Config, ctx: &Context) -> Result<Result<FunctionService, String>, BoxError> {
    if cfg.broker.storage == StorageMode::Memory {
        let why = "the node keeps no files (storage = \"memory\"); use mmap or fsync storage";
        tracing::info!("functions on demand are off: {why}");
        return Ok(Err(why.to_string()));
    }
    let dir = cfg.broker.data_dir.join(".rules").join("functions");
    let store = FunctionStore::open(dir)?;
    let runner = Runner::new(ctx.broker.clone(), store, ctx.stop.clone());
    Ok(Ok(FunctionService::new(runner)))
}

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    if !cfg.rules.enabled {
        return Ok(None);
    }
    let dir =
        (cfg.broker.storage != StorageMode::Memory).then(|| cfg.broker.data_dir.join(".rules"));
    let broker = ctx.broker.clone();
    let limits = fogline_rules::Limits {
        max_rules: cfg.rules.max_rules,
        max_window_rows: cfg.rules.max_window_rows,
    };
    let service = functions(cfg, ctx)?;
    let for_rules = service
        .as_ref()
        .ok()
        .map(|s| Arc::new(s.clone()) as Arc<dyn Functions>);
    let rules = Rules::open(broker, dir, for_rules, limits)?;
    let mut routes = ctx.routes.lock();
    routes.push(fogline_admin::ExtraRoutes {
        router: fogline_rules::api::routes(rules.clone()),
        openapi: fogline_rules::api::OPENAPI,
    });
    routes.push(fogline_admin::ExtraRoutes {
        router: api::routes(service.clone()),
        openapi: api::OPENAPI,
    });
    drop(routes);
    ctx.feed
        .lock()
        .push(Arc::new(fogline_rules::feed::RulesFeed(rules.clone())));
    let mut metrics = ctx.metrics.lock();
    let collector = fogline_rules::metrics::RulesCollector(rules.clone());
    metrics.register_collector(Box::new(collector));
    if let Ok(s) = &service {
        metrics.register_collector(Box::new(FunctionsCollector(s.clone())));
    }
    drop(metrics);
    let mut stop = ctx.stop.clone();
    Ok(Some(Started {
        endpoints: Vec::new(),
        task: Box::pin(async move {
            let _ = stop.wait_for(|s| *s).await;
            rules.shut_down().await;
            if let Ok(s) = service {
                s.stop_all().await;
            }
            Ok(())
        }),
    }))
}
