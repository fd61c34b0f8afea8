//! A gateway of one keyless route, served on a free loopback port for the test's life.

use kite_core::Model;
use kite_serve::{Gateway, Route};
use std::net::SocketAddr;
use std::sync::Arc;

/// Serves `model` as `name` and returns where.
pub(crate) async fn serve_one(name: &str, model: impl Model + 'static) -> SocketAddr {
    let gateway = Gateway::new(vec![Route::new(name, Arc::new(model), name)], false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    addr
}
