//! The queryable store (`[store]`): `fogline_store::service::Store` indexes the configured
//! streams by data profile and time; its REST routes (`/api/v1/query`, `/api/v1/store`) go
//! to the admin API and its counts to `/metrics`. Deleted records are kept in
//! `<data_dir>/.store` (in memory only on a node that keeps no files).

use fogline_broker::StorageMode;
use fogline_store::service::{api, metrics::StoreCollector, Store};

use crate::component::{BoxError, BoxFuture, Component, Context, Started};
use crate::config::Config;

pub(crate) const COMPONENT: Component = Component {
    name: "store",
    start: boxed,
};

fn boxed<'a>(
    cfg: &'a Config,
    ctx: &'a Context,
) -> BoxFuture<'a, Result<Option<Started>, BoxError>> {
    Box::pin(start(cfg, ctx))
}

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    if cfg.store.streams.is_empty() {
        return Ok(None);
    }
    let dir =
        (cfg.broker.storage != StorageMode::Memory).then(|| cfg.broker.data_dir.join(".store"));
    let store = Store::open(&ctx.broker, &cfg.store, dir)?;
    ctx.broker.set_store(std::sync::Arc::new(store.clone()));
    ctx.routes.lock().push(fogline_admin::ExtraRoutes {
        router: api::routes(store.clone()),
        openapi: api::OPENAPI,
    });
    ctx.metrics
        .lock()
        .register_collector(Box::new(StoreCollector(store.clone())));
    let stop = ctx.stop.clone();
    tracing::info!(streams = ?cfg.store.streams, "the store indexes its streams");
    Ok(Some(Started {
        endpoints: Vec::new(),
        task: Box::pin(async move {
            store.run(stop).await;
            Ok(())
        }),
    }))
}
