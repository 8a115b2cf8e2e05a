//! WMI on the calling thread: a connection per call, made and released
//! inside [`with`], in the multithreaded apartment the process holds
//! (`win32::hold_process_mta`), and the few shapes of call the boundary
//! needs (a query, an instance's path, a method call, a property read),
//! with COM failures turned into [`Failure::Com`].

use wmi::{AuthLevel, IWbemClassWrapper, Variant, WMIConnection, WMIError};

use super::win32::hold_process_mta;
use crate::host_process::boundary::{Failure, Result};

/// `WBEM_E_NOT_FOUND`.
pub(super) const WBEM_E_NOT_FOUND: u32 = 0x8004_1002;
/// `E_FAIL`: what a failure that carries no HRESULT of its own is reported as.
const E_FAIL: u32 = 0x8000_4005;

/// The WMI namespaces the boundary uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Namespace {
    /// Disks, partitions, volumes, iSCSI.
    Storage,
    /// SMB global mappings.
    Smb,
    /// Services and the BIOS.
    Cimv2,
}

impl Namespace {
    fn path(self) -> &'static str {
        match self {
            Namespace::Storage => r"ROOT\Microsoft\Windows\Storage",
            Namespace::Smb => r"ROOT\Microsoft\Windows\SMB",
            Namespace::Cimv2 => r"ROOT\CIMV2",
        }
    }
}

/// Runs `f` with a new connection to `namespace`, and releases the
/// connection, and every object `f` got through it, before returning, on
/// this thread: nothing of COM outlives the call (see the module docs of
/// `super` for why).
pub(super) fn with<T>(
    namespace: Namespace,
    f: impl FnOnce(&WMIConnection) -> Result<T>,
) -> Result<T> {
    hold_process_mta()?;
    let connection = connect(namespace)?;
    let result = f(&connection);
    drop(connection);
    result
}

fn connect(namespace: Namespace) -> Result<WMIConnection> {
    let connection = WMIConnection::with_namespace_path(namespace.path()).map_err(|e| {
        failure(
            e,
            &format!("connecting to WMI namespace {}", namespace.path()),
        )
    })?;
    if namespace == Namespace::Smb {
        // Create carries a password: ask for an encrypted channel, as
        // csi-proxy v2 does for all of its WMI calls (locally it costs
        // nothing).
        connection
            .set_proxy_blanket(AuthLevel::PktPrivacy)
            .map_err(|e| failure(e, "setting the SMB connection's security"))?;
    }
    Ok(connection)
}

/// Names of the WBEM codes the boundary meets most; the system has no text
/// for them (they live in WMI's own message table).
fn wbem_name(hresult: u32) -> Option<&'static str> {
    Some(match hresult {
        0x8004_1001 => "WBEM_E_FAILED",
        0x8004_1002 => "WBEM_E_NOT_FOUND",
        0x8004_1003 => "WBEM_E_ACCESS_DENIED",
        0x8004_1008 => "WBEM_E_INVALID_PARAMETER",
        0x8004_100E => "WBEM_E_INVALID_NAMESPACE",
        0x8004_1010 => "WBEM_E_INVALID_CLASS",
        0x8004_1013 => "WBEM_E_PROVIDER_LOAD_FAILURE",
        0x8004_1017 => "WBEM_E_INVALID_QUERY",
        0x8004_1024 => "WBEM_E_PROVIDER_NOT_CAPABLE",
        0x8004_102F => "WBEM_E_INVALID_METHOD_PARAMETERS",
        0x8004_1055 => "WBEM_E_METHOD_NOT_IMPLEMENTED",
        _ => return None,
    })
}

/// A `wmi` crate error as a boundary failure, `doing` saying what was tried.
pub(super) fn failure(e: WMIError, doing: &str) -> Failure {
    match e {
        WMIError::HResultError { hres } => {
            let hresult = hres as u32;
            let text = windows::core::HRESULT(hres).message();
            let text = text.trim_end();
            let name = wbem_name(hresult).unwrap_or("");
            let message = match (name.is_empty(), text.is_empty()) {
                (false, false) => format!("{doing}: {name}: {text}"),
                (false, true) => format!("{doing}: {name}"),
                (true, false) => format!("{doing}: {text}"),
                (true, true) => format!("{doing} failed"),
            };
            Failure::com(hresult, message)
        }
        other => Failure::com(E_FAIL, format!("{doing}: {other}")),
    }
}

/// The instances a WQL query returns (none is an empty `Vec`).
pub(super) fn query(conn: &WMIConnection, wql: &str) -> Result<Vec<IWbemClassWrapper>> {
    let doing = || format!("WMI query `{wql}`");
    conn.exec_query(wql)
        .map_err(|e| failure(e, &doing()))?
        .map(|item| item.map_err(|e| failure(e, &doing())))
        .collect()
}

/// The `__PATH` of the first instance `wql` returns; `WBEM_E_NOT_FOUND`
/// when there is none (the object the method was meant for is gone).
pub(super) fn path_of(conn: &WMIConnection, wql: &str) -> Result<String> {
    let first = query(conn, wql)?.into_iter().next().ok_or_else(|| {
        Failure::com(
            WBEM_E_NOT_FOUND,
            format!("WMI query `{wql}`: WBEM_E_NOT_FOUND: no such object"),
        )
    })?;
    object_path(&first)
}

/// An object's `__PATH`, for `ASSOCIATORS OF` and method calls. Wine's WMI
/// hands it over with NULs after the text (the BSTR's length counts its
/// whole buffer); they are cut, or the path would not parse.
pub(super) fn object_path(obj: &IWbemClassWrapper) -> Result<String> {
    let path = obj.path().map_err(|e| failure(e, "reading __PATH"))?;
    Ok(path.trim_end_matches('\0').to_string())
}

/// `ASSOCIATORS OF {path} WHERE AssocClass = assoc ResultClass = result`.
pub(super) fn associators(
    conn: &WMIConnection,
    path: &str,
    assoc: &str,
    result: &str,
) -> Result<Vec<IWbemClassWrapper>> {
    query(
        conn,
        &format!("ASSOCIATORS OF {{{path}}} WHERE AssocClass = {assoc} ResultClass = {result}"),
    )
}

/// Calls `method` of `class` on `object_path` (the class name for a static
/// method, an instance's `__PATH` otherwise) with the named in-parameters
/// (the others are left null), and returns the out-parameters object.
pub(super) fn call(
    conn: &WMIConnection,
    class: &str,
    object_path: &str,
    method: &str,
    args: Vec<(&str, Variant)>,
) -> Result<Option<IWbemClassWrapper>> {
    let doing = format!("{class}.{method}");
    let fail = |e| failure(e, &doing);
    let signature = conn
        .get_object(class)
        .map_err(fail)?
        .get_method(method)
        .map_err(fail)?;
    let input = match signature {
        Some(signature) => {
            let input = signature.spawn_instance().map_err(fail)?;
            for (name, value) in args {
                input
                    .put_property(name, value)
                    .map_err(|e| failure(e, &format!("{doing}: parameter {name}")))?;
            }
            Some(input)
        }
        None if args.is_empty() => None,
        None => {
            return Err(Failure::com(
                0x8004_102F,
                format!(
                    "{doing}: WBEM_E_INVALID_METHOD_PARAMETERS: the method takes no parameters"
                ),
            ));
        }
    };
    conn.exec_method(object_path, method, input.as_ref())
        .map_err(fail)
}

/// A method call's `ReturnValue`.
pub(super) fn return_value(out: Option<&IWbemClassWrapper>, method: &str) -> Result<u32> {
    let out = out.ok_or_else(|| {
        Failure::com(
            E_FAIL,
            format!("{method} returned no out-parameters object"),
        )
    })?;
    let value = out
        .get_property("ReturnValue")
        .map_err(|e| failure(e, &format!("{method}: reading ReturnValue")))?;
    number(&value)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| {
            Failure::com(
                E_FAIL,
                format!("{method}: ReturnValue {value:?} is not a number"),
            )
        })
}

/// A numeric variant as an unsigned number (WMI's uint64 travels as a
/// string; uint16 and uint32 as signed 32-bit values).
fn number(value: &Variant) -> Option<u64> {
    match value {
        Variant::UI1(n) => Some(u64::from(*n)),
        Variant::UI2(n) => Some(u64::from(*n)),
        Variant::UI4(n) => Some(u64::from(*n)),
        Variant::UI8(n) => Some(*n),
        Variant::I1(n) => u64::try_from(*n).ok(),
        Variant::I2(n) => u64::try_from(*n).ok(),
        Variant::I4(n) => u64::try_from(*n).ok(),
        Variant::I8(n) => u64::try_from(*n).ok(),
        Variant::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn property(obj: &IWbemClassWrapper, name: &str) -> Result<Variant> {
    obj.get_property(name)
        .map_err(|e| failure(e, &format!("reading property {name}")))
}

/// A string property; null is the empty string.
pub(super) fn string(obj: &IWbemClassWrapper, name: &str) -> Result<String> {
    match property(obj, name)? {
        Variant::String(s) => Ok(s),
        Variant::Null | Variant::Empty => Ok(String::new()),
        other => Err(Failure::com(
            E_FAIL,
            format!("property {name} is {other:?}, not a string"),
        )),
    }
}

/// A numeric property; null is 0.
pub(super) fn unsigned(obj: &IWbemClassWrapper, name: &str) -> Result<u64> {
    match property(obj, name)? {
        Variant::Null | Variant::Empty => Ok(0),
        value => number(&value).ok_or_else(|| {
            Failure::com(
                E_FAIL,
                format!("property {name} is {value:?}, not a number"),
            )
        }),
    }
}

/// A numeric property that fits in 32 bits.
pub(super) fn u32_prop(obj: &IWbemClassWrapper, name: &str) -> Result<u32> {
    let n = unsigned(obj, name)?;
    u32::try_from(n)
        .map_err(|_| Failure::com(E_FAIL, format!("property {name} = {n} is too large")))
}

/// A boolean property; null is `None`.
pub(super) fn optional_boolean(obj: &IWbemClassWrapper, name: &str) -> Result<Option<bool>> {
    match property(obj, name)? {
        Variant::Bool(b) => Ok(Some(b)),
        Variant::Null | Variant::Empty => Ok(None),
        other => Err(Failure::com(
            E_FAIL,
            format!("property {name} is {other:?}, not a boolean"),
        )),
    }
}

/// A boolean property; null is false.
pub(super) fn boolean(obj: &IWbemClassWrapper, name: &str) -> Result<bool> {
    match property(obj, name)? {
        Variant::Bool(b) => Ok(b),
        Variant::Null | Variant::Empty => Ok(false),
        other => Err(Failure::com(
            E_FAIL,
            format!("property {name} is {other:?}, not a boolean"),
        )),
    }
}
