//! The iscsi group (v1alpha2) over the boundary: `MSFT_iSCSITargetPortal`,
//! `MSFT_iSCSITarget`, `MSFT_iSCSISession`, and the disks of a target's
//! sessions, with csi-proxy v1.3.0's rules: adding a registered portal and
//! logging in to a connected target do nothing, logging out of a target
//! that is not connected does nothing, removing a portal that is not there
//! fails; a portal's port 0 is 3260 and a port above 65535 keeps its low
//! 16 bits.

use super::backend::{Ctx, ENDPOINT, HostProcess};
use super::boundary::{Failure, IscsiAuthType, MethodResult, PortalObject, TargetObject};
use crate::Error;
use crate::iscsi::v1alpha2 as api;

/// `ISDSC_TARGET_ALREADY_LOGGED_IN`: `Connect` found a session to the
/// target (another login got there between our look and our call).
const ISDSC_TARGET_ALREADY_LOGGED_IN: u32 = 0xEFFF_003F;
/// `ISDSC_INVALID_SESSION_ID`: `Disconnect` found no such session (it
/// ended between our look and our call).
const ISDSC_INVALID_SESSION_ID: u32 = 0xEFFF_001C;

/// `ISDSC_SERVICE_NOT_RUNNING`: the initiator service is stopped, the
/// call could not be made at all.
const ISDSC_SERVICE_NOT_RUNNING: u32 = 0xEFFF_003E;

/// `Connect`: logged in, and already logged in.
const CONNECT_OK: [u32; 2] = [0, ISDSC_TARGET_ALREADY_LOGGED_IN];
/// `Disconnect`: logged out, and no such session any more.
const DISCONNECT_OK: [u32; 2] = [0, ISDSC_INVALID_SESSION_ID];

/// A portal of a request: its address as given, its port as the proxy uses it.
struct Portal {
    address: String,
    port: u32,
}

impl Portal {
    /// The request's portal; a request without one is `INVALID_ARGUMENT`
    /// (the proxy's process would crash on it).
    fn of(method: &'static str, portal: Option<api::TargetPortal>) -> Result<Portal, Error> {
        let portal = portal.ok_or_else(|| {
            Error::rpc(
                ENDPOINT,
                method,
                tonic::Status::invalid_argument("target_portal is required"),
            )
        })?;
        let port = match portal.target_port {
            0 => 3260,
            // The proxy passes the port as a 16-bit number.
            n => n & 0xFFFF,
        };
        Ok(Portal {
            address: portal.target_address,
            port,
        })
    }

    /// `(address:port)`, as the proxy's texts show a portal.
    fn at(&self) -> String {
        format!("({}:{})", self.address, self.port)
    }

    fn is(&self, found: &PortalObject) -> bool {
        found.address.eq_ignore_ascii_case(&self.address) && found.port == self.port
    }

    fn not_found(&self) -> String {
        format!(
            "failed to query iSCSI target portal at {}. error: not found",
            self.at()
        )
    }
}

/// Whether `portal` is registered; a failed query is `gist. err: ...`.
fn registered(ctx: &Ctx, portal: &Portal, gist: &str) -> Result<bool, String> {
    let portals = ctx
        .host()
        .iscsi_portals()
        .map_err(|e| format!("{gist}. err: {e}"))?;
    Ok(portals.iter().any(|p| portal.is(p)))
}

/// The target `iqn` (compared exactly) offered by the registered `portal`.
fn find_target(ctx: &Ctx, portal: &Portal, iqn: &str, gist: &str) -> Result<TargetObject, String> {
    let fail = |e: String| {
        format!(
            "error query target {iqn} from target portal at {}. err: {e}",
            portal.at()
        )
    };
    if !registered(ctx, portal, gist)? {
        return Err(fail(portal.not_found()));
    }
    ctx.host()
        .iscsi_targets(&portal.address, portal.port)
        .map_err(|e| fail(e.to_string()))?
        .into_iter()
        .find(|t| t.node_address == iqn)
        .ok_or_else(|| fail("not found".into()))
}

/// An iSCSI method's outcome with the initiator's own code read where
/// Windows puts it: the provider fails the call with its `ISDSC_*` code
/// (`0xEFFFxxxx`) as `ExecMethod`'s HRESULT instead of returning it as
/// `ReturnValue`, so such a failure is the method's code here, for
/// [`accept`] and for the error text (`code=N`, as the proxy words it).
/// A stopped initiator service stays a failure to call.
fn outcome(result: Result<MethodResult, Failure>) -> Result<MethodResult, Failure> {
    match result {
        Err(Failure::Com { hresult, .. })
            if hresult & 0xFFFF_0000 == 0xEFFF_0000 && hresult != ISDSC_SERVICE_NOT_RUNNING =>
        {
            Ok(MethodResult::code(hresult))
        }
        other => other,
    }
}

/// A method whose codes in `ok` count as done.
fn accept(
    ok: &[u32],
    class_method: &str,
    target: impl FnOnce() -> String,
    result: MethodResult,
) -> Result<(), String> {
    if ok.contains(&result.code) {
        if result.code != 0 {
            tracing::debug!(class_method, code = result.code, "taken as done");
        }
        Ok(())
    } else {
        Err(crate::win::texts::iscsi_failed(
            class_method,
            &target(),
            result.code,
        ))
    }
}

fn add_portal(ctx: &Ctx, portal: &Portal) -> Result<(), String> {
    let gist = format!("error adding target portal at {}", portal.at());
    if registered(ctx, portal, &gist)? {
        tracing::debug!(portal = %portal.at(), "target portal already registered");
        return Ok(());
    }
    let fail = |e: String| format!("{gist}. err: {e}");
    let result = ctx.host().iscsi_new_portal(&portal.address, portal.port);
    let result = outcome(result).map_err(|e| fail(e.to_string()))?;
    accept(
        &[0],
        "MSFT_iSCSITargetPortal.New",
        || "<nil>".into(),
        result,
    )
    .map_err(fail)
}

fn discover(ctx: &Ctx, portal: &Portal) -> Result<Vec<String>, String> {
    let gist = format!("error list targets by target portal at {}", portal.at());
    if !registered(ctx, portal, &gist)? {
        return Err(format!("{gist}. err: {}", portal.not_found()));
    }
    let targets = ctx
        .host()
        .iscsi_targets(&portal.address, portal.port)
        .map_err(|e| format!("{gist}. err: {e}"))?;
    Ok(targets.into_iter().map(|t| t.node_address).collect())
}

fn remove_portal(ctx: &Ctx, portal: &Portal) -> Result<(), String> {
    let gist = format!("error removing target portal at {}", portal.at());
    if !registered(ctx, portal, &gist)? {
        return Err(format!(
            "error query target portal at {}. err: {}",
            portal.at(),
            portal.not_found()
        ));
    }
    let fail = |e: String| format!("{gist}. err: {e}");
    let result = ctx.host().iscsi_remove_portal(&portal.address, portal.port);
    let result = outcome(result).map_err(|e| fail(e.to_string()))?;
    let target = || {
        format!(
            "MSFT_iSCSITargetPortal (TargetPortalAddress = \"{}\", TargetPortalPortNumber = {})",
            portal.address, portal.port
        )
    };
    accept(&[0], "MSFT_iSCSITargetPortal.Remove", target, result).map_err(fail)
}

fn auth_type(code: i32) -> Result<IscsiAuthType, String> {
    match code {
        0 => Ok(IscsiAuthType::None),
        1 => Ok(IscsiAuthType::OneWayChap),
        2 => Ok(IscsiAuthType::MutualChap),
        n => Err(format!("invalid authentication type authType={n}")),
    }
}

fn connect(ctx: &Ctx, portal: &Portal, request: &api::ConnectTargetRequest) -> Result<(), String> {
    let auth = auth_type(request.auth_type)?;
    let iqn = &request.iqn;
    let gist = "error connecting to target portal";
    if find_target(ctx, portal, iqn, gist)?.is_connected {
        tracing::debug!(iqn, portal = %portal.at(), "target already connected");
        return Ok(());
    }
    let fail = |e: String| format!("{gist}. err: {e}");
    let result = ctx.host().iscsi_connect(
        &portal.address,
        portal.port,
        iqn,
        auth,
        &request.chap_username,
        &request.chap_secret,
    );
    let result = outcome(result).map_err(|e| fail(e.to_string()))?;
    accept(
        &CONNECT_OK,
        "MSFT_iSCSITarget.Connect",
        || "<nil>".into(),
        result,
    )
    .map_err(fail)
}

fn disconnect(ctx: &Ctx, portal: &Portal, iqn: &str) -> Result<(), String> {
    let gist = "error disconnecting from target portal";
    if !find_target(ctx, portal, iqn, gist)?.is_connected {
        tracing::debug!(iqn, portal = %portal.at(), "target not connected");
        return Ok(());
    }
    let at = portal.at();
    let sessions = ctx.host().iscsi_sessions(iqn).map_err(|e| {
        format!("error query session of target {iqn} from target portal at {at}. err: {e}")
    })?;
    let Some(session) = sessions.into_iter().next() else {
        return Ok(());
    };
    let id = &session.identifier;
    if session.is_persistent {
        let fail = |e: String| {
            format!("error unregister session on target {iqn} from target portal at {at}. err: {e}")
        };
        let result =
            outcome(ctx.host().iscsi_unregister_session(id)).map_err(|e| fail(e.to_string()))?;
        let target = || format!("MSFT_iSCSISession (SessionIdentifier = \"{id}\")");
        accept(&[0], "MSFT_iSCSISession.Unregister", target, result).map_err(fail)?;
    }
    let fail = |e: String| {
        format!("error disconnecting target {iqn} from target portal at {at}. err: {e}")
    };
    let result = ctx.host().iscsi_disconnect(iqn, id);
    let result = outcome(result).map_err(|e| fail(e.to_string()))?;
    let target = || format!("MSFT_iSCSITarget (NodeAddress = \"{iqn}\")");
    accept(
        &DISCONNECT_OK,
        "MSFT_iSCSITarget.Disconnect",
        target,
        result,
    )
    .map_err(fail)
}

fn target_disks(ctx: &Ctx, portal: &Portal, iqn: &str) -> Result<Vec<String>, String> {
    if !find_target(ctx, portal, iqn, "error getting target disks")?.is_connected {
        return Ok(Vec::new());
    }
    let disks = ctx.host().iscsi_target_disks(iqn).map_err(|e| {
        format!(
            "error getting target disks on target {iqn} from target portal at {}. err: {e}",
            portal.at()
        )
    })?;
    Ok(disks.iter().map(u32::to_string).collect())
}

#[async_trait::async_trait]
impl api::IscsiApi for HostProcess {
    async fn add_target_portal(
        &self,
        request: api::AddTargetPortalRequest,
    ) -> Result<api::AddTargetPortalResponse, Error> {
        const METHOD: &str = "/v1alpha2.Iscsi/AddTargetPortal";
        let portal = Portal::of(METHOD, request.target_portal)?;
        self.run(METHOD, move |ctx| {
            add_portal(ctx, &portal).map(|()| api::AddTargetPortalResponse {})
        })
        .await
    }

    async fn connect_target(
        &self,
        request: api::ConnectTargetRequest,
    ) -> Result<api::ConnectTargetResponse, Error> {
        const METHOD: &str = "/v1alpha2.Iscsi/ConnectTarget";
        let portal = Portal::of(METHOD, request.target_portal.clone())?;
        self.run(METHOD, move |ctx| {
            connect(ctx, &portal, &request).map(|()| api::ConnectTargetResponse {})
        })
        .await
    }

    async fn disconnect_target(
        &self,
        request: api::DisconnectTargetRequest,
    ) -> Result<api::DisconnectTargetResponse, Error> {
        const METHOD: &str = "/v1alpha2.Iscsi/DisconnectTarget";
        let portal = Portal::of(METHOD, request.target_portal)?;
        self.run(METHOD, move |ctx| {
            disconnect(ctx, &portal, &request.iqn).map(|()| api::DisconnectTargetResponse {})
        })
        .await
    }

    async fn discover_target_portal(
        &self,
        request: api::DiscoverTargetPortalRequest,
    ) -> Result<api::DiscoverTargetPortalResponse, Error> {
        const METHOD: &str = "/v1alpha2.Iscsi/DiscoverTargetPortal";
        let portal = Portal::of(METHOD, request.target_portal)?;
        self.run(METHOD, move |ctx| {
            discover(ctx, &portal).map(|iqns| api::DiscoverTargetPortalResponse { iqns })
        })
        .await
    }

    async fn get_target_disks(
        &self,
        request: api::GetTargetDisksRequest,
    ) -> Result<api::GetTargetDisksResponse, Error> {
        const METHOD: &str = "/v1alpha2.Iscsi/GetTargetDisks";
        let portal = Portal::of(METHOD, request.target_portal)?;
        self.run(METHOD, move |ctx| {
            target_disks(ctx, &portal, &request.iqn)
                .map(|disk_i_ds| api::GetTargetDisksResponse { disk_i_ds })
        })
        .await
    }

    async fn list_target_portals(
        &self,
        _request: api::ListTargetPortalsRequest,
    ) -> Result<api::ListTargetPortalsResponse, Error> {
        self.run("/v1alpha2.Iscsi/ListTargetPortals", |ctx| {
            let portals = ctx
                .host()
                .iscsi_portals()
                .map_err(|e| format!("error listing target portals. err: {e}"))?;
            Ok(api::ListTargetPortalsResponse {
                target_portals: portals
                    .into_iter()
                    .map(|p| api::TargetPortal {
                        target_address: p.address,
                        target_port: p.port,
                    })
                    .collect(),
            })
        })
        .await
    }

    async fn remove_target_portal(
        &self,
        request: api::RemoveTargetPortalRequest,
    ) -> Result<api::RemoveTargetPortalResponse, Error> {
        const METHOD: &str = "/v1alpha2.Iscsi/RemoveTargetPortal";
        let portal = Portal::of(METHOD, request.target_portal)?;
        self.run(METHOD, move |ctx| {
            remove_portal(ctx, &portal).map(|()| api::RemoveTargetPortalResponse {})
        })
        .await
    }

    async fn set_mutual_chap_secret(
        &self,
        request: api::SetMutualChapSecretRequest,
    ) -> Result<api::SetMutualChapSecretResponse, Error> {
        self.run("/v1alpha2.Iscsi/SetMutualChapSecret", move |ctx| {
            let fail = |e: String| format!("error setting mutual chap secret. err: {e}");
            let result = outcome(
                ctx.host()
                    .iscsi_set_chap_secret(&request.mutual_chap_secret),
            )
            .map_err(|e| fail(e.to_string()))?;
            accept(
                &[0],
                "MSFT_iSCSISession.SetCHAPSecret",
                || "<nil>".into(),
                result,
            )
            .map_err(fail)?;
            Ok(api::SetMutualChapSecretResponse {})
        })
        .await
    }
}
