//! SQL rules, IF-THEN triggers and pattern sets (`[rules]`): `fogline_rules::Rules`, its
//! REST routes and live-feed fields handed to the admin API and its counters to `/metrics`. Started after the
//! listeners and before the admin API; stopped before the listeners, each rule writing its
//! last checkpoint.

use fogline_broker::StorageMode;
use fogline_rules::Rules;

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

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    if !cfg.rules.enabled {
        return Ok(None);
    }
    let dir =
        (cfg.broker.storage != StorageMode::Memory).then(|| cfg.broker.data_dir.join(".rules"));
    let broker = ctx.broker.clone();
    let max = cfg.rules.max_rules;
    let rules = Rules::open(broker, dir, None, max)?;
    ctx.routes
        .lock()
        .push(fogline_rules::api::routes(rules.clone()));
    ctx.feed
        .lock()
        .push(std::sync::Arc::new(fogline_rules::feed::RulesFeed(
            rules.clone(),
        )));
    ctx.metrics
        .lock()
        .register_collector(Box::new(fogline_rules::metrics::RulesCollector(
            rules.clone(),
        )));
    let mut stop = ctx.stop.clone();
    Ok(Some(Started {
        endpoints: Vec::new(),
        task: Box::pin(async move {
            let _ = stop.wait_for(|s| *s).await;
            rules.shut_down().await;
            Ok(())
        }),
    }))
}
