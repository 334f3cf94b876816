//! The HTTP admin API, metrics and dashboard (`[admin]`): `fogline_admin::AdminServer`.
//! Started last, so it serves the others from their first moment.

use fogline_auth::Authenticator as _;
use std::sync::Arc;

use fogline_admin::{AdminServer, AdminState};

use crate::component::{endpoints, BoxError, BoxFuture, Component, Context, Started};
use crate::config::Config;

pub(crate) const COMPONENT: Component = Component {
    name: "admin",
    start: boxed,
};

fn boxed<'a>(
    cfg: &'a Config,
    ctx: &'a Context,
) -> BoxFuture<'a, Result<Option<Started>, BoxError>> {
    Box::pin(start(cfg, ctx))
}

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    if cfg.admin.listen.is_empty() && cfg.admin.tls_listen.is_empty() {
        return Ok(None);
    }
    let state = AdminState {
        broker: ctx.broker.clone(),
        node: ctx.node.clone(),
        components: ctx.health.clone() as Arc<dyn fogline_admin::Components>,
        registry: ctx.metrics.clone(),
        events_interval: cfg.admin.events_interval,
        feed: std::mem::take(&mut *ctx.feed.lock()),
    };
    let extra = std::mem::take(&mut *ctx.routes.lock());
    let server = AdminServer::bind(cfg.admin.clone(), state, extra).await?;
    let guarded = !cfg.admin.token.is_empty() || !ctx.broker.guard().admits_anonymous();
    let mut eps = endpoints("http", server.local_addrs(), guarded);
    eps.extend(endpoints("https", server.tls_addrs(), guarded));
    if let Some(tls) = server.tls() {
        ctx.tls.add(tls);
    }
    let stop = ctx.stop.clone();
    Ok(Some(Started {
        endpoints: eps,
        task: Box::pin(async move {
            server.run(stop).await;
            Ok(())
        }),
    }))
}
