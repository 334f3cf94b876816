//! The native protocol's listeners (`[native]`): `fogline_native::NativeServer`.

use fogline_auth::Authenticator as _;
use fogline_native::NativeServer;

use crate::component::{endpoints, BoxError, BoxFuture, Component, Context, Started};
use crate::config::Config;

pub(crate) const COMPONENT: Component = Component {
    name: "native",
    start: boxed,
};

fn boxed<'a>(
    cfg: &'a Config,
    ctx: &'a Context,
) -> BoxFuture<'a, Result<Option<Started>, BoxError>> {
    Box::pin(start(cfg, ctx))
}

async fn start(cfg: &Config, ctx: &Context) -> Result<Option<Started>, BoxError> {
    if cfg.native.listen.is_empty() && cfg.native.tls_listen.is_empty() {
        return Ok(None);
    }
    let server = NativeServer::bind(cfg.native.clone(), ctx.broker.clone())
        .await?
        .with_intake(ctx.read_budget.clone(), cfg.node.frame_timeout);
    let guarded = !ctx.broker.guard().admits_anonymous();
    let mut endpoints = endpoints("native", server.local_addrs(), guarded);
    endpoints.extend(crate::component::endpoints(
        "native-tls",
        server.tls_addrs(),
        guarded,
    ));
    if let Some(tls) = server.tls() {
        ctx.tls.add(tls);
    }
    let stop = ctx.stop.clone();
    Ok(Some(Started {
        endpoints,
        task: Box::pin(async move {
            server.run(stop).await;
            Ok(())
        }),
    }))
}
