//! The iSCSI model as Windows' WMI classes show it (`MSFT_iSCSITargetPortal`,
//! `MSFT_iSCSITarget`, `MSFT_iSCSISession`), one call at a time: what the
//! fake Windows boundary of the host-process backend
//! (`crate::host_process::FakeWindows`) answers.
//!
//! Unlike the RPC operations of [`IscsiState`], these decide nothing for
//! the caller: no idempotency (logging in to a connected target fails with
//! [`ISDSC_TARGET_ALREADY_LOGGED_IN`], ending a session twice with
//! [`ISDSC_INVALID_SESSION_ID`]), no error texts; a failure is its code.
//! Every call fails with [`ISDSC_SERVICE_NOT_RUNNING`] while `MSiSCSI` is
//! stopped.

use super::{
    AuthenticationType, CHAP_SECRET_LEN, ERROR_INVALID_PARAMETER, ISDSC_INVALID_SESSION_ID,
    ISDSC_SERVICE_NOT_RUNNING, ISDSC_TARGET_ALREADY_LOGGED_IN, IscsiState, NodeDisks, PortalKey,
    RegisteredPortal, Session,
};

/// A failure code, or success.
pub type WmiResult<T> = Result<T, u32>;

fn running(disks: &NodeDisks<'_>) -> WmiResult<()> {
    if disks.initiator_service_running() {
        Ok(())
    } else {
        Err(ISDSC_SERVICE_NOT_RUNNING)
    }
}

impl IscsiState {
    /// `SELECT * FROM MSFT_iSCSITargetPortal`: the registered portals.
    pub(crate) fn wmi_portals(&self, disks: &NodeDisks<'_>) -> WmiResult<Vec<RegisteredPortal>> {
        running(disks)?;
        Ok(self.portals.clone())
    }

    /// `MSFT_iSCSITargetPortal.New`: registers the portal (again: refreshes
    /// what it offers) after asking the server for its targets.
    pub(crate) fn wmi_new_portal(
        &mut self,
        disks: &NodeDisks<'_>,
        address: &str,
        port: u16,
    ) -> WmiResult<()> {
        running(disks)?;
        let key = PortalKey::new(address, port);
        let targets = self.read_targets(&key)?;
        if self.portal_index(&key).is_none() {
            self.portals.push(RegisteredPortal {
                address: address.to_owned(),
                port,
            });
        }
        self.discovered.insert(key, targets);
        Ok(())
    }

    /// `MSFT_iSCSITargetPortal.Remove` on the portal: `Ok(false)` when it is
    /// not registered (the object to call the method on is missing).
    pub(crate) fn wmi_remove_portal(
        &mut self,
        disks: &NodeDisks<'_>,
        address: &str,
        port: u16,
    ) -> WmiResult<bool> {
        running(disks)?;
        let key = PortalKey::new(address, port);
        let Some(index) = self.portal_index(&key) else {
            return Ok(false);
        };
        self.portals.remove(index);
        self.discovered.remove(&key);
        Ok(true)
    }

    /// The targets associated with the portal (`NodeAddress`,
    /// `IsConnected`); `Ok(None)` when the portal is not registered.
    pub(crate) fn wmi_targets(
        &self,
        disks: &NodeDisks<'_>,
        address: &str,
        port: u16,
    ) -> WmiResult<Option<Vec<(String, bool)>>> {
        running(disks)?;
        Ok(self
            .discovered
            .get(&PortalKey::new(address, port))
            .map(|iqns| {
                iqns.iter()
                    .map(|iqn| (iqn.clone(), self.is_connected(iqn)))
                    .collect()
            }))
    }

    /// `MSFT_iSCSITarget.Connect`: logs in and attaches the LUNs' disks.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn wmi_connect(
        &mut self,
        disks: &mut NodeDisks<'_>,
        address: &str,
        port: u16,
        iqn: &str,
        auth: AuthenticationType,
        user: &str,
        secret: &str,
    ) -> WmiResult<()> {
        running(disks)?;
        if self.is_connected(iqn) {
            return Err(ISDSC_TARGET_ALREADY_LOGGED_IN);
        }
        self.log_in(
            disks,
            PortalKey::new(address, port),
            iqn,
            auth,
            user,
            secret,
        )
    }

    /// The sessions of target `iqn`.
    pub(crate) fn wmi_sessions(&self, disks: &NodeDisks<'_>, iqn: &str) -> WmiResult<Vec<Session>> {
        running(disks)?;
        Ok(self
            .sessions
            .iter()
            .filter(|s| s.iqn == iqn)
            .cloned()
            .collect())
    }

    /// `MSFT_iSCSISession.Unregister`: drops the session's persistent login.
    pub(crate) fn wmi_unregister(&mut self, disks: &NodeDisks<'_>, session: &str) -> WmiResult<()> {
        running(disks)?;
        let index = self.session_index(session)?;
        self.unregister(index);
        Ok(())
    }

    /// `MSFT_iSCSITarget.Disconnect(SessionIdentifier)` on target `iqn`:
    /// ends the session and detaches its disks.
    pub(crate) fn wmi_disconnect(
        &mut self,
        disks: &mut NodeDisks<'_>,
        iqn: &str,
        session: &str,
    ) -> WmiResult<()> {
        running(disks)?;
        let index = self.session_index(session)?;
        if self.sessions[index].iqn != iqn {
            return Err(ISDSC_INVALID_SESSION_ID);
        }
        self.log_out(disks, index);
        Ok(())
    }

    /// The disk numbers of target `iqn`'s sessions, in LUN order.
    pub(crate) fn wmi_target_disks(&self, disks: &NodeDisks<'_>, iqn: &str) -> WmiResult<Vec<u32>> {
        running(disks)?;
        Ok(self
            .sessions
            .iter()
            .filter(|s| s.iqn == iqn)
            .flat_map(|s| s.disks.iter().copied())
            .collect())
    }

    /// `MSFT_iSCSISession.SetCHAPSecret`: Windows' 12..=16 byte rule, then
    /// the node's mutual CHAP secret.
    pub(crate) fn wmi_set_chap_secret(
        &mut self,
        disks: &NodeDisks<'_>,
        secret: &str,
    ) -> WmiResult<()> {
        running(disks)?;
        if !CHAP_SECRET_LEN.contains(&secret.len()) {
            return Err(ERROR_INVALID_PARAMETER);
        }
        self.mutual_chap_secret = Some(secret.to_owned());
        Ok(())
    }

    fn session_index(&self, id: &str) -> WmiResult<usize> {
        self.sessions
            .iter()
            .position(|s| s.id == id)
            .ok_or(ISDSC_INVALID_SESSION_ID)
    }
}
