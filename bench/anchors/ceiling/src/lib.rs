//! The ceilings `npm run bench` measures our lanes against, in the same workerd: a request answered
//! by the wasm entry alone (`/`), and one forwarded to a Durable Object that does nothing (`/hop`).
use worker::{
    durable_object, event, Context, DurableObject, Env, Request, Response, Result, State,
};

/// `/hop` goes to the one `Hop` object (as a session's requests go to theirs); anything else is
/// answered here.
#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    if req.path() == "/hop" {
        let stub = env.durable_object("HOP")?.id_from_name("hop")?.get_stub()?;
        return stub.fetch_with_request(req).await;
    }
    Response::ok("ok")
}

/// A Durable Object that answers every request at once: the cost of the hop alone.
#[durable_object]
pub struct Hop {
    _state: State,
}

impl DurableObject for Hop {
    fn new(state: State, _env: Env) -> Self {
        Hop { _state: state }
    }

    async fn fetch(&self, _req: Request) -> Result<Response> {
        Response::ok("ok")
    }
}
