//! Every error format of csi-proxy v1.1.3 and v1.3.0 that reaches a client
//! from the groups the node layer uses, with the kind and code it must read
//! as. The formats (the words around the `%v`s, the way causes nest, the
//! numbers) are upstream's; the paths, disks and shares filling them are
//! made up. Windows' and PowerShell's parts are written as a Windows node
//! prints them; `(Wine)` rows hold what Windows-on-Wine prints instead.

use super::{HostCode, phrase_kind};
use crate::ErrorKind::{self, *};
use HostCode::*;

/// go-ole's text for `DISP_E_EXCEPTION` when Windows has no message for it
/// (under Wine).
const WINE_DISP: &str =
    "error 2147614729 (FormatMessage failed with: Message 0x%1 not found in file %2.)";

const CONFLICT: &str = "Multiple connections to a server or shared resource by the same user, \
    using more than one user name, are not allowed. Disconnect all previous connections to the \
    server or shared resource and try again.";

/// A PowerShell error record as v1.1.3 captures it (`%q` of the combined
/// output, so its line breaks are `\r\n` escapes).
fn ps(cmdlet: &str, message: &str, category: &str, id: &str) -> String {
    format!(
        "{cmdlet} : {message}\\r\\nAt line:1 char:1\\r\\n+ {cmdlet} ...\\r\\n+ ~~~~~~~~~~~~~~~~~~~~\\r\\n    \
         + CategoryInfo          : {category}\\r\\n    + FullyQualifiedErrorId : {id},{cmdlet}\\r\\n \\r\\n"
    )
}

struct Row {
    release: &'static str,
    rpc: &'static str,
    text: String,
    kind: ErrorKind,
    code: Option<HostCode>,
}

fn row(
    release: &'static str,
    rpc: &'static str,
    text: impl Into<String>,
    kind: ErrorKind,
    code: Option<HostCode>,
) -> Row {
    Row {
        release,
        rpc,
        text: text.into(),
        kind,
        code,
    }
}

fn v1_3() -> Vec<Row> {
    let r = "v1.3.0";
    let share = r"\\fileserver\share";
    let vol = r"\\?\Volume{6a0e5a3c-1b8e-4d33-9c7b-2f0f6f0b1e11}\";
    vec![
        // smb: pkg/os/smb, pkg/cim/smb.go, pkg/cim/wmi.go, pkg/server/smb
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                "NewSmbGlobalMapping failed. result: -1, err: failed to connect to WMI. error: {WINE_DISP}"
            ),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                "NewSmbGlobalMapping failed. result: -1, err: failed to get local WMI session for namespace Root\\Microsoft\\Windows\\Smb. error: {WINE_DISP}"
            ),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. ({CONFLICT} )"
            ),
            CredentialsConflict,
            Some(Win32(1219)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (The user name or password is incorrect. )",
            PermissionDenied,
            Some(Win32(1326)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (The network name cannot be found. )",
            NotFound,
            Some(Win32(67)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            "NewSmbGlobalMapping failed. result: -1, err: Exception occurred. (Access denied )",
            PermissionDenied,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!("NewSmbGlobalMapping failed. result: -1, err: {WINE_DISP} (<nil>)"),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!("error remove smb mapping '{share}'. err: Not Found"),
            NotFound,
            None,
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                r"creating link C:\var\lib\kubelet\pods\x to {share}\pv failed with error: error linking {share}\pv\ to C:\var\lib\kubelet\pods\x. err: Cannot create a file when that file already exists."
            ),
            AlreadyExists,
            Some(Win32(183)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            r"path: C:\Windows\evil is not within the working directories: [C:\var\lib\kubelet]",
            PermissionDenied,
            None,
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            r"remote path (\\fileserver) is invalid",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            "remote path is empty",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!("error remove smb mapping '{share}'. err: Not Found"),
            NotFound,
            None,
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!(
                "error remove smb mapping '{share}'. err: failed to connect to WMI. error: {WINE_DISP}"
            ),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!(
                "error remove smb mapping '{share}'. err: failed to query WMI class MSFT_SmbGlobalMapping. error: Exception occurred. (Invalid namespace )"
            ),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!("error remove smb mapping '{share}'. err: Exception occurred. (Not found )"),
            NotFound,
            Some(HResult(0x8002_0009)),
        ),
        // filesystem: pkg/server/filesystem (path checks), Go's os errors
        row(
            r,
            "Mkdir",
            r"path: C:\Windows\evil is not within the working directories: [C:\var\lib\kubelet]",
            PermissionDenied,
            None,
        ),
        row(
            r,
            "Mkdir",
            r"not an absolute Windows path: var\lib\x",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "Mkdir",
            r"path contains invalid characters: C:\var\lib\kubelet\a|b",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "Mkdir",
            r"unsupported UNC path prefix: \\server\share",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "Mkdir",
            r"invalid character \ at beginning of path: \var",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "Mkdir",
            "path length 300 exceeds maximum characters: 260",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "Mkdir",
            r"mkdir C:\var\lib\kubelet\x: Access is denied.",
            PermissionDenied,
            Some(Win32(5)),
        ),
        row(
            r,
            "Rmdir",
            r"remove C:\var\lib\kubelet\x: The directory is not empty.",
            InUse,
            Some(Win32(145)),
        ),
        row(
            r,
            "Rmdir",
            r"remove C:\var\lib\kubelet\x: The system cannot find the file specified.",
            NotFound,
            Some(Win32(2)),
        ),
        row(
            r,
            "RmdirContents",
            r"open C:\var\lib\kubelet\x: The system cannot find the path specified.",
            NotFound,
            Some(Win32(3)),
        ),
        row(
            r,
            "CreateSymlink",
            r"symlink C:\var\lib\kubelet\a C:\var\lib\kubelet\b: Cannot create a file when that file already exists.",
            AlreadyExists,
            Some(Win32(183)),
        ),
        row(
            r,
            "IsSymlink",
            r"failed to get path C:\var\lib\kubelet\x attribute: The system cannot find the file specified.",
            NotFound,
            Some(Win32(2)),
        ),
        row(
            r,
            "IsSymlink",
            r"readlink error: readlink C:\var\lib\kubelet\x: The file or directory is not a reparse point.",
            InvalidArgument,
            Some(Win32(4390)),
        ),
        row(
            r,
            "PathExists",
            r"invalid path: CreateFile C:\var\lib\kubelet\x: The filename, directory name, or volume label syntax is incorrect.",
            InvalidArgument,
            Some(Win32(123)),
        ),
        // disk: pkg/os/disk, pkg/cim/disk.go
        row(
            r,
            "Rescan",
            format!(
                "error updating host storage cache output. result: -1, err: failed to connect to WMI. error: {WINE_DISP}"
            ),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "Rescan",
            "error updating host storage cache output. result: 2, err: <nil>",
            Other,
            Some(WmiResult(2)),
        ),
        row(
            r,
            "ListDiskLocations",
            "could not query disk locations",
            Other,
            None,
        ),
        row(
            r,
            "ListDiskLocations",
            format!("failed to query disk number: MSFT_Disk (ObjectId = 1), {WINE_DISP}"),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "GetDiskStats",
            "failed to query size of disk 9. failed to query disk 9. error: Not Found",
            NotFound,
            None,
        ),
        row(
            r,
            "PartitionDisk",
            "error checking initialized status of disk 9: failed to query disk 9. error: Not Found",
            NotFound,
            None,
        ),
        row(
            r,
            "PartitionDisk",
            "failed to initializing disk 2: result 40001, error: <nil>",
            Other,
            Some(WmiResult(40001)),
        ),
        row(
            r,
            "PartitionDisk",
            "error creating partition on disk 2. result: 4, err: <nil>",
            Other,
            Some(WmiResult(4)),
        ),
        row(
            r,
            "PartitionDisk",
            "error rescan disk (2). result 2, error: <nil>",
            Other,
            Some(WmiResult(2)),
        ),
        row(
            r,
            "PartitionDisk",
            "error bring partition MSFT_Partition (ObjectId = 3) on disk 2 online. result: 5, status Invalid Parameter, err: <nil>",
            Other,
            Some(WmiResult(5)),
        ),
        row(
            r,
            "GetDiskNumberByName",
            "could not find disk with Page83 ID 600224801a8a6b3c9e0d0c8a2f3e4d5c",
            NotFound,
            None,
        ),
        row(
            r,
            "SetDiskState",
            "setting disk 2 attach state (isOnline: true): result 40001, error: <nil>",
            Other,
            Some(WmiResult(40001)),
        ),
        row(
            r,
            "GetDiskState",
            "error setting disk 9 attach state. error: failed to query disk 9. error: Not Found",
            NotFound,
            None,
        ),
        // volume: pkg/os/volume, pkg/cim/volume.go, pkg/server/volume
        row(
            r,
            "ListVolumesOnDisk",
            "failed to query disk 9. error: Not Found",
            NotFound,
            None,
        ),
        row(
            r,
            "MountVolume",
            "MountVolumeRequest.VolumeId is empty",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "MountVolume",
            "MountVolumeRequest.TargetPath is empty",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "MountVolume",
            format!(
                r"error mount volume ({vol}) to path C:\var\lib\kubelet\x. error: The directory is not empty."
            ),
            InUse,
            Some(Win32(145)),
        ),
        row(
            r,
            "UnmountVolume",
            format!(
                r"Forward to UnmountVolume failed, err=error umount volume ({vol}) from path C:\var\lib\kubelet\x. error: The system cannot find the file specified."
            ),
            NotFound,
            Some(Win32(2)),
        ),
        row(r, "UnmountVolume", "volume id empty", InvalidArgument, None),
        row(
            r,
            "UnmountVolume",
            "target path empty",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "FormatVolume",
            format!("error formatting volume ({vol}). result: 40001, error: <nil>"),
            Other,
            Some(WmiResult(40001)),
        ),
        row(
            r,
            "FormatVolume",
            format!(
                "error formatting volume ({vol}). error: failed to query volume ({vol}). error: Not Found"
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "IsVolumeFormatted",
            format!(
                "error checking if volume ({vol}) is formatted. error: failed to query volume ({vol}). error: Not Found"
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "ResizeVolume",
            format!(
                "error getting sizeMin, sizeMax from volume ({vol}). result: 4, status: Failed, error: <nil>"
            ),
            Other,
            Some(WmiResult(4)),
        ),
        row(
            r,
            "GetVolumeStats",
            format!(
                "Forward to GetVolumeStats failed, err=error getting capacity and used size of volume ({vol}). error: failed to query volume ({vol}). error: Not Found"
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "GetDiskNumberFromVolumeID",
            format!(
                "Forward to GetDiskNumberFromVolumeID failed, err=error query disk number of volume ({vol}). error: failed to query volume ({vol}). error: {WINE_DISP}"
            ),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "GetVolumeIDFromTargetPath",
            "target path is empty",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "WriteVolumeCache",
            format!("error writing volume ({vol}) cache. result: 4, error: <nil>"),
            Other,
            Some(WmiResult(4)),
        ),
        // iscsi: pkg/os/iscsi, pkg/cim/iscsi.go, pkg/server/iscsi
        row(
            r,
            "AddTargetPortal",
            "error adding target portal at (10.0.0.5:3260). err: failed to create iSCSI target portal with map[TargetPortalAddress:10.0.0.5 TargetPortalPortNumber:3260]. result: -1, error: Exception occurred. (The target name is not found or is marked as hidden from login. )",
            Other,
            Some(HResult(0x8002_0009)),
        ),
        row(
            r,
            "DiscoverTargetPortal",
            "error list targets by target portal at (10.0.0.5:3260). err: failed to query iSCSI target portal at (10.0.0.5:3260). error: Not Found",
            NotFound,
            None,
        ),
        row(
            r,
            "ConnectTarget",
            "error connecting to target portal. result: 4, err: <nil>",
            Other,
            Some(WmiResult(4)),
        ),
        row(
            r,
            "ConnectTarget",
            "invalid authentication type authType=7",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "DisconnectTarget",
            "error query target iqn.2003-01.org.x:t from target portal at (10.0.0.5:3260). err: Not Found",
            NotFound,
            None,
        ),
        row(
            r,
            "SetMutualChapSecret",
            "error setting mutual chap secret. result: 5, err: <nil>",
            Other,
            Some(WmiResult(5)),
        ),
        row(
            r,
            "RemoveTargetPortal",
            format!(
                "error removing target portal at (10.0.0.5:3260). result: -1, err: failed to connect to WMI. error: {WINE_DISP}"
            ),
            Other,
            Some(HResult(0x8002_0009)),
        ),
        // system: pkg/os/system, pkg/cim/system.go
        row(
            r,
            "GetService",
            "failed to get service nosuch. error: failed to get service nosuch: Not Found",
            NotFound,
            None,
        ),
        row(
            r,
            "StartService",
            "error starting service name msiscsi. return value: 2, error: <nil>",
            Other,
            Some(WmiResult(2)),
        ),
        row(
            r,
            "StartService",
            "timed out waiting for service msiscsi to become running",
            TimedOut,
            None,
        ),
        row(
            r,
            "StopService",
            "error stopping service msiscsi as dependent services are not stopped",
            Other,
            None,
        ),
        row(
            r,
            "GetBIOSSerialNumber",
            format!("failed to get BIOS element: failed to connect to WMI. error: {WINE_DISP}"),
            Other,
            Some(HResult(0x8002_0009)),
        ),
    ]
}

fn v1_1() -> Vec<Row> {
    let r = "v1.1.3";
    let share = r"\\fileserver\share";
    let exit = ", err: exit status 1";
    vec![
        // smb: pkg/os/smb (PowerShell), pkg/server/smb
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                "NewSmbGlobalMapping failed. output: \"{}\"{exit}",
                ps(
                    "New-SmbGlobalMapping",
                    CONFLICT,
                    "NotSpecified: (MSFT_SmbGlobalMapping:ROOT/Microsoft/...mbGlobalMapping) [New-SmbGlobalMapping], CimException",
                    "Windows System Error 1219"
                )
            ),
            CredentialsConflict,
            Some(Win32(1219)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                "NewSmbGlobalMapping failed. output: \"{}\"{exit}",
                ps(
                    "New-SmbGlobalMapping",
                    "The user name or password is incorrect.",
                    "NotSpecified: (MSFT_SmbGlobalMapping:ROOT/Microsoft/...mbGlobalMapping) [New-SmbGlobalMapping], CimException",
                    "Windows System Error 1326"
                )
            ),
            PermissionDenied,
            Some(Win32(1326)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                "NewSmbGlobalMapping failed. output: \"{}\"{exit}",
                ps(
                    "New-SmbGlobalMapping",
                    "Invalid namespace ",
                    "MetadataError: (MSFT_SmbGlobalMapping:ROOT/Microsoft/...mbGlobalMapping) [New-SmbGlobalMapping], CimException",
                    "HRESULT 0x8004100e"
                )
            ),
            Other,
            Some(HResult(0x8004_100E)),
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!(
                "UnmountSmbShare failed. output: \"{}\"{exit}",
                ps(
                    "Remove-SmbGlobalMapping",
                    &format!(
                        "No MSFT_SmbGlobalMapping objects found with property 'RemotePath' equal to '{share}'.  Verify the value of the property and retry."
                    ),
                    &format!(
                        "ObjectNotFound: ({share}:String) [Remove-SmbGlobalMapping], CimJobException"
                    ),
                    "CmdletizationQuery_NotFound_RemotePath"
                )
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!(
                "UnmountSmbShare failed. output: \"{}\"{exit}",
                ps(
                    "Remove-SmbGlobalMapping",
                    "Not found ",
                    "ObjectNotFound: (MSFT_SmbGlobalMapping:ROOT/Microsoft/...mbGlobalMapping) [Remove-SmbGlobalMapping], CimException",
                    "HRESULT 0x80041002"
                )
            ),
            NotFound,
            Some(HResult(0x8004_1002)),
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!(
                "UnmountSmbShare failed. output: \"{}\"{exit}",
                ps(
                    "Remove-SmbGlobalMapping",
                    "Invalid namespace ",
                    "MetadataError: (MSFT_SmbGlobalMapping:ROOT/Microsoft/...mbGlobalMapping) [Remove-SmbGlobalMapping], CimException",
                    "HRESULT 0x8004100e"
                )
            ),
            Other,
            Some(HResult(0x8004_100E)),
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            format!(
                "UnmountSmbShare failed. output: \"{}\"{exit}",
                ps(
                    "Remove-SmbGlobalMapping",
                    "Access denied ",
                    "PermissionDenied: (MSFT_SmbGlobalMapping:ROOT/Microsoft/...mbGlobalMapping) [Remove-SmbGlobalMapping], CimException",
                    "HRESULT 0x80041003"
                )
            ),
            PermissionDenied,
            Some(HResult(0x8004_1003)),
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            format!(
                r#"creating link C:\var\lib\kubelet\pods\x to {share}\pv failed with error: error linking {share}\pv\ to C:\var\lib\kubelet\pods\x. output: {}, err: exit status 1"#,
                ps(
                    "New-Item",
                    r"An item with the specified name C:\var\lib\kubelet\pods\x already exists.",
                    r"ResourceExists: (C:\var\lib\kubelet\pods\x:String) [New-Item], IOException",
                    "DirectoryExist,Microsoft.PowerShell.Commands.NewItemCommand"
                )
            ),
            AlreadyExists,
            None,
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            r"path: C:\Windows\evil is not within the working directories: [C:\var\lib\kubelet]",
            PermissionDenied,
            None,
        ),
        row(
            r,
            "NewSmbGlobalMapping",
            r"remote path (\\fileserver) is invalid",
            InvalidArgument,
            None,
        ),
        row(
            r,
            "RemoveSmbGlobalMapping",
            "remote path is empty",
            InvalidArgument,
            None,
        ),
        // filesystem: Go's os errors, as in v1.3.0; PathValid ran PowerShell
        row(
            r,
            "Rmdir",
            r"remove C:\var\lib\kubelet\x: The directory is not empty.",
            InUse,
            Some(Win32(145)),
        ),
        row(
            r,
            "Mkdir",
            r"path: C:\Windows\evil is not within the working directories: [C:\var\lib\kubelet]",
            PermissionDenied,
            None,
        ),
        row(
            r,
            "IsSymlink",
            r"readlink error: readlink C:\var\lib\kubelet\x: The file or directory is not a reparse point.",
            InvalidArgument,
            Some(Win32(4390)),
        ),
        row(
            r,
            "PathValid",
            format!(
                "returned output: {}, error: exit status 1",
                ps(
                    "Test-Path",
                    "Access is denied",
                    r"PermissionDenied: (\\fileserver\share:String) [Test-Path], UnauthorizedAccessException",
                    "ItemExistsUnauthorizedAccessError,Microsoft.PowerShell.Commands.TestPathCommand"
                )
            ),
            PermissionDenied,
            Some(Win32(5)),
        ),
        // disk: pkg/os/disk (PowerShell)
        row(
            r,
            "Rescan",
            format!(
                "error updating host storage cache output: \"{}\"{exit}",
                ps(
                    "Update-HostStorageCache",
                    "Generic failure ",
                    "NotSpecified: (:) [Update-HostStorageCache], CimException",
                    "HRESULT 0x80041001"
                )
            ),
            Other,
            Some(HResult(0x8004_1001)),
        ),
        row(
            r,
            "ListDiskLocations",
            "failed to list disk location. cmd: \"Get-Disk | select number, location | ConvertTo-Json\", output: \"\", err exit status 1",
            Other,
            None,
        ),
        row(
            r,
            "PartitionDisk",
            format!(
                "error checking initialized status of disk 9: {}, exit status 1",
                ps(
                    "Get-Disk",
                    "No MSFT_Disk objects found with property 'Number' equal to '9'.  Verify the value of the property and retry.",
                    "ObjectNotFound: (9:UInt32) [Get-Disk], CimJobException",
                    "CmdletizationQuery_NotFound_Number"
                )
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "PartitionDisk",
            format!(
                "error initializing disk 2: {}, exit status 1",
                ps(
                    "Initialize-Disk",
                    "The disk has already been initialized.",
                    "InvalidOperation: (StorageWMI:ROOT/Microsoft/Windows/Storage/MSFT_Disk) [Initialize-Disk], CimException",
                    "StorageWMI 41001"
                )
            ),
            Other,
            Some(WmiResult(41001)),
        ),
        row(
            r,
            "PartitionDisk",
            format!(
                "error creating partition on disk 2: {}, exit status 1",
                ps(
                    "New-Partition",
                    "Not enough available capacity",
                    "NotSpecified: (StorageWMI:ROOT/Microsoft/Windows/Storage/MSFT_Disk) [New-Partition], CimException",
                    "StorageWMI 40000"
                )
            ),
            Other,
            Some(WmiResult(40000)),
        ),
        row(
            r,
            "GetDiskNumberByName",
            "Could not find disk with Page83 ID 600224801a8a6b3c9e0d0c8a2f3e4d5c",
            NotFound,
            None,
        ),
        row(
            r,
            "GetDiskStats",
            format!(
                "error getting size of disk. cmd: (Get-Disk -Number $Env:diskID).Size, output: {}, error: exit status 1",
                ps(
                    "Get-Disk",
                    "No MSFT_Disk objects found with property 'Number' equal to '9'.  Verify the value of the property and retry.",
                    "ObjectNotFound: (9:UInt32) [Get-Disk], CimJobException",
                    "CmdletizationQuery_NotFound_Number"
                )
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "SetDiskState",
            format!(
                "error setting disk attach state. cmd: ..., output: {}, error: exit status 1",
                ps(
                    "Set-Disk",
                    "Access denied",
                    "PermissionDenied: (StorageWMI:ROOT/Microsoft/Windows/Storage/MSFT_Disk) [Set-Disk], CimException",
                    "StorageWMI 40001"
                )
            ),
            PermissionDenied,
            Some(WmiResult(40001)),
        ),
        // volume: pkg/os/volume (PowerShell)
        row(
            r,
            "ListVolumesOnDisk",
            format!(
                "error list volumes on disk. cmd: ..., output: {}, error: exit status 1",
                ps(
                    "Get-Disk",
                    "No MSFT_Disk objects found with property 'Number' equal to '9'.  Verify the value of the property and retry.",
                    "ObjectNotFound: (9:UInt32) [Get-Disk], CimJobException",
                    "CmdletizationQuery_NotFound_Number"
                )
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "MountVolume",
            format!(
                "error mount volume to path. cmd: ..., output: {}, error: exit status 1",
                ps(
                    "Add-PartitionAccessPath",
                    "The requested access path is already in use.",
                    "InvalidArgument: (StorageWMI:ROOT/Microsoft/...s/MSFT_Partition) [Add-PartitionAccessPath], CimException",
                    "StorageWMI 42002"
                )
            ),
            Other,
            Some(WmiResult(42002)),
        ),
        row(
            r,
            "UnmountVolume",
            format!(
                "Forward to UnmountVolume failed, err=error getting driver letter to mount volume. cmd: ..., output: {},error: exit status 1",
                ps(
                    "Get-Volume",
                    r"No MSFT_Volume objects found with property 'UniqueId' equal to '\\?\Volume{{x}}\'.",
                    "ObjectNotFound: (:String) [Get-Volume], CimJobException",
                    "CmdletizationQuery_NotFound_UniqueId"
                )
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "FormatVolume",
            format!(
                "error formatting volume. cmd: ..., output: {}, error: exit status 1",
                ps(
                    "Format-Volume",
                    "Access denied",
                    "PermissionDenied: (StorageWMI:ROOT/Microsoft/...age/MSFT_Volume) [Format-Volume], CimException",
                    "StorageWMI 40001"
                )
            ),
            PermissionDenied,
            Some(WmiResult(40001)),
        ),
        row(
            r,
            "GetVolumeStats",
            "Forward to GetVolumeStats failed, err=error getting capacity and used size of volume. cmd: ..., output: , error: exit status 1",
            Other,
            None,
        ),
        row(
            r,
            "GetVolumeIDFromTargetPath",
            r"error getting the volume for the mount C:\var\lib\kubelet\x, internal error error getting volume from mount. cmd: ..., output: , error: exit status 1",
            Other,
            None,
        ),
        row(
            r,
            "MountVolume",
            "MountVolumeRequest.VolumeId is empty",
            InvalidArgument,
            None,
        ),
        row(r, "UnmountVolume", "volume id empty", InvalidArgument, None),
        // iscsi: pkg/os/iscsi (PowerShell)
        row(
            r,
            "AddTargetPortal",
            format!(
                "error adding target portal. cmd ..., output: {}, err: exit status 1",
                ps(
                    "New-IscsiTargetPortal",
                    "The target name is not found or is marked as hidden from login.",
                    "ObjectNotFound: (MSFT_iSCSITargetPortal:ROOT/Microsoft/...TargetPortal) [New-IscsiTargetPortal], CimException",
                    "HRESULT 0xefff000b"
                )
            ),
            NotFound,
            Some(HResult(0xEFFF_000B)),
        ),
        row(
            r,
            "ConnectTarget",
            format!(
                "error connecting to target portal. cmd ..., output: {}, err: exit status 1",
                ps(
                    "Connect-IscsiTarget",
                    "Authentication Failure.",
                    "AuthenticationError: (MSFT_iSCSITarget:ROOT/Microsoft/...SFT_iSCSITarget) [Connect-IscsiTarget], CimException",
                    "HRESULT 0xefff0009"
                )
            ),
            PermissionDenied,
            Some(HResult(0xEFFF_0009)),
        ),
        row(
            r,
            "ConnectTarget",
            "invalid authentication type authType=7",
            InvalidArgument,
            None,
        ),
        // system: pkg/os/system (PowerShell)
        row(
            r,
            "GetService",
            format!(
                "error querying service name=nosuch. cmd: ..., output: {}, error: exit status 1",
                ps(
                    "Get-Service",
                    "Cannot find any service with service name 'nosuch'.",
                    "ObjectNotFound: (nosuch:String) [Get-Service], ServiceCommandException",
                    "NoServiceFoundForGivenName,Microsoft.PowerShell.Commands.GetServiceCommand"
                )
            ),
            NotFound,
            None,
        ),
        row(
            r,
            "StartService",
            "error starting service name=msiscsi. cmd: ..., output: , error: exit status 1",
            Other,
            None,
        ),
    ]
}

#[test]
fn every_format_of_both_releases_reads_as_its_kind_and_code() {
    let mut wrong = Vec::new();
    let rows: Vec<Row> = v1_3().into_iter().chain(v1_1()).collect();
    for r in &rows {
        let code = HostCode::find(&r.text);
        let kind = ErrorKind::of_host_text(&r.text);
        if code != r.code || kind != r.kind {
            wrong.push(format!(
                "{} {}: got {kind:?} {code:?}, want {:?} {:?}\n    {}",
                r.release, r.rpc, r.kind, r.code, r.text
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} rows wrong:\n{}",
        wrong.len(),
        rows.len(),
        wrong.join("\n")
    );
    assert!(rows.len() > 100, "{}", rows.len());
}

#[test]
fn a_failure_to_describe_an_error_is_not_a_not_found() {
    // Windows quoting its own missing message text says nothing about what failed.
    for text in [
        WINE_DISP.to_string(),
        "error 2147749902 (FormatMessage failed with: The system cannot find message text for message number 0x%1 in the message file for %2.)".to_string(),
    ] {
        assert_eq!(phrase_kind(&text), None, "{text}");
        assert_eq!(ErrorKind::of_host_text(&text), Other, "{text}");
    }
    assert_eq!(
        HostCode::find("error 2147749902 (x)"),
        Some(HResult(0x8004_100E))
    );
}

#[test]
fn codes_of_each_kind() {
    assert_eq!(HostCode::find("0x80070005"), Some(Win32(5)));
    assert_eq!(HostCode::find("HRESULT 0x80070057,Foo"), Some(Win32(87)));
    assert_eq!(HostCode::find("WMI Error 0x00000003"), Some(WmiResult(3)));
    assert_eq!(HostCode::find("result: -1, err: <nil>"), None);
    assert_eq!(HostCode::find("result: 0, err: boom"), None);
    assert_eq!(
        HostCode::find("code=1219 and 0x80041002"),
        Some(Win32(1219))
    );
    assert_eq!(HostCode::Win32(2).kind(), Some(NotFound));
    assert_eq!(HostCode::HResult(0x8004_1002).kind(), Some(NotFound));
    assert_eq!(HostCode::HResult(0x8002_0009).kind(), None);
    assert_eq!(HostCode::WmiResult(2).kind(), None);
    // Not a hex HRESULT: too short, too long, or below 0x80000000.
    assert_eq!(HostCode::find("0x8004100"), None);
    assert_eq!(HostCode::find("0x800410021"), None);
    assert_eq!(HostCode::find("0x00041002"), None);
}
