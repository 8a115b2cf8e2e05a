//! The failure texts of the disk and volume groups' WMI methods, in the
//! words of each csi-proxy release: one place for the simulated host and
//! the HostProcess backend (`host_process`), which speaks v1.3.
//!
//! How a failed method's return value reaches the client:
//!
//! - **v1.3** calls the method through WMI and puts its return value in
//!   the text as `result N` or `result: N`, the Go error beside it being
//!   `nil` (`%!w(<nil>)` where the format wraps it with `%w`). Resize is
//!   the exception: its text has no result, only `error: <nil>`, so a
//!   driver learns nothing from a failed resize but that it failed.
//! - **v1.1** runs a PowerShell cmdlet and quotes its combined output
//!   (the error record, whose id is `StorageWMI N` with the method's return
//!   value) followed by Go's `exit status 1`.
//!
//! [`HostCode::find`](crate::HostCode::find) reads both as
//! `HostCode::WmiResult(N)`: a number whose meaning depends on the class,
//! never a Win32 error. The formats are taken from the two releases'
//! sources; PowerShell's record is rendered the way Windows prints one and
//! was not checked against a Windows node.

use super::release::{ProxyRelease, powershell_error};

/// What Go prints for a `nil` error wrapped with `%w`.
const NIL_WRAPPED: &str = "%!w(<nil>)";

/// What Go's `exec` reports for a PowerShell that failed.
const EXIT_STATUS: &str = "exit status 1";

/// A short message for a storage method's return value, as the PowerShell
/// record of v1.1 shows one. The 4xxxx meanings are those of Microsoft's
/// "Storage Management API Common Return Codes"
/// (<https://learn.microsoft.com/en-us/windows-hardware/drivers/storage/storage-management-api-common-return-codes>).
fn storage_message(code: u32) -> String {
    match code {
        1 => "Not Supported".into(),
        2 => "Unspecified Error".into(),
        3 => "Timeout".into(),
        4 => "Failed".into(),
        5 => "Invalid Parameter".into(),
        4097 => "Size Not Supported".into(),
        40000 => "Not enough available capacity".into(),
        41001 => "The disk has already been initialized.".into(),
        41002 => "The disk is read only.".into(),
        41003 => "The disk is offline.".into(),
        41009 => "Operation not supported on a critical disk.".into(),
        42009 => "Cannot resize a partition containing an unknown file system.".into(),
        42010 => "The operation is not allowed on a system or critical partition.".into(),
        43006 => "Cannot perform the requested operation when the drive is read only".into(),
        _ => format!("The storage operation failed with return value {code}."),
    }
}

/// v1.1's text: the PowerShell record of `cmdlet` (run as `command` on an
/// object of `class`) failing with `code`.
fn cmdlet_output(cmdlet: &str, command: &str, class: &str, code: u32) -> String {
    powershell_error(
        cmdlet,
        &storage_message(code),
        command,
        &format!(
            "NotSpecified: (StorageWMI:ROOT/Microsoft/Windows/Storage/{class}) [{cmdlet}], CimException"
        ),
        &format!("StorageWMI {code}"),
    )
}

/// `MSFT_Disk.Initialize` (GPT) of disk `disk` returned `code`.
pub fn initialize_failed(release: ProxyRelease, disk: u32, code: u32) -> String {
    match release {
        ProxyRelease::V0_2 | ProxyRelease::V1_1 => {
            let command = format!("Initialize-Disk -Number {disk} -PartitionStyle GPT");
            let out = cmdlet_output("Initialize-Disk", &command, "MSFT_Disk", code);
            format!("error initializing disk {disk}: {out}, {EXIT_STATUS}")
        }
        ProxyRelease::V1_3 => {
            format!("failed to initializing disk {disk}: result {code}, error: {NIL_WRAPPED}")
        }
    }
}

/// `MSFT_Disk.CreatePartition` (the whole disk, basic data) of disk `disk`
/// returned `code`.
pub fn create_partition_failed(release: ProxyRelease, disk: u32, code: u32) -> String {
    match release {
        ProxyRelease::V0_2 | ProxyRelease::V1_1 => {
            let command = format!("New-Partition -DiskNumber {disk} -UseMaximumSize");
            let out = cmdlet_output("New-Partition", &command, "MSFT_Disk", code);
            format!("error creating partition on disk {disk}: {out}, {EXIT_STATUS}")
        }
        ProxyRelease::V1_3 => {
            format!("error creating partition on disk {disk}. result: {code}, err: <nil>")
        }
    }
}

/// `MSFT_Disk.Online` or `.Offline` of disk `disk` returned `code`.
pub fn set_disk_state_failed(release: ProxyRelease, disk: u32, online: bool, code: u32) -> String {
    match release {
        ProxyRelease::V0_2 | ProxyRelease::V1_1 => {
            let command = format!(
                "(Get-Disk -Number {disk}) | Set-Disk -IsOffline ${}",
                !online
            );
            let out = cmdlet_output("Set-Disk", &command, "MSFT_Disk", code);
            format!(
                "error setting disk attach state. cmd: {command}, output: {out}, error: {EXIT_STATUS}"
            )
        }
        ProxyRelease::V1_3 => format!(
            "setting disk {disk} attach state (isOnline: {online}): result {code}, error: {NIL_WRAPPED}"
        ),
    }
}

/// `MSFT_Volume.Format` (NTFS) of volume `volume` returned `code`.
pub fn format_failed(release: ProxyRelease, volume: &str, code: u32) -> String {
    match release {
        ProxyRelease::V0_2 | ProxyRelease::V1_1 => {
            let command = r#"Get-Volume -UniqueId "$Env:volumeID" | Format-Volume -FileSystem ntfs -Confirm:$false"#;
            let out = cmdlet_output("Format-Volume", command, "MSFT_Volume", code);
            format!("error formatting volume. cmd: {command}, output: {out}, error: {EXIT_STATUS}")
        }
        ProxyRelease::V1_3 => {
            format!("error formatting volume ({volume}). result: {code}, error: <nil>")
        }
    }
}

/// `MSFT_Partition.Resize` of volume `volume`'s partition to `final_size`
/// (asked: `size`) returned `code`. v1.3 leaves the code out of its text.
pub fn resize_failed(
    release: ProxyRelease,
    volume: &str,
    size: i64,
    final_size: u64,
    code: u32,
) -> String {
    match release {
        ProxyRelease::V0_2 | ProxyRelease::V1_1 => {
            let command = format!(
                r#"Get-Volume -UniqueId "$Env:volumeID" | Get-Partition | Resize-Partition -Size {final_size}"#
            );
            let out = cmdlet_output("Resize-Partition", &command, "MSFT_Partition", code);
            format!(
                "error resizing volume. cmd: {command}, output: {out} size:{size}, finalSize {final_size}, error: {EXIT_STATUS}"
            )
        }
        ProxyRelease::V1_3 => format!(
            "error resizing volume ({volume}). size:{size}, finalSize {final_size}, error: <nil>"
        ),
    }
}

/// v1.3: `MSFT_Disk.Refresh` of disk `disk` returned `code`.
pub fn refresh_failed(disk: u32, code: u32) -> String {
    format!("error rescan disk ({disk}). result {code}, error: <nil>")
}

/// v1.3: `MSFT_Partition.Online` of partition `partition` of disk `disk`
/// returned `code` (v1.3 prints the partition object there; here its number).
pub fn partition_online_failed(disk: u32, partition: u32, code: u32) -> String {
    format!(
        "error bring partition {partition} on disk {disk} online. result: {code}, status , err: <nil>"
    )
}

/// v1.3: `MSFT_Partition.GetSupportedSize` for volume `volume` returned `code`.
pub fn supported_size_failed(volume: &str, code: u32) -> String {
    format!(
        "error getting sizeMin, sizeMax from volume ({volume}). result: {code}, status: , error: <nil>"
    )
}

/// `MSFT_Partition.GetSupportedSize` for volume `volume` (ResizeVolume to
/// the maximum) returned `code`, in `release`'s words: v1.1 runs
/// `Get-PartitionSupportedSize` and quotes its record (`StorageWMI 4`
/// when the defrag service cannot answer).
pub fn supported_size_failed_in(release: ProxyRelease, volume: &str, code: u32) -> String {
    match release {
        ProxyRelease::V0_2 | ProxyRelease::V1_1 => {
            let command = r#"Get-Volume -UniqueId "$Env:volumeID" | Get-partition | Get-PartitionSupportedSize | Select SizeMax | ConvertTo-Json"#;
            let out = cmdlet_output(
                "Get-PartitionSupportedSize",
                command,
                "MSFT_Partition",
                code,
            );
            format!(
                "error getting sizemin,sizemax from mount. cmd: {command}, output: {out}, error: {EXIT_STATUS}"
            )
        }
        ProxyRelease::V1_3 => supported_size_failed(volume, code),
    }
}

/// v1.3: `MSFT_Volume.Flush` of volume `volume` returned `code`.
pub fn flush_failed(volume: &str, code: u32) -> String {
    format!("error writing volume ({volume}) cache. result: {code}, error: <nil>")
}

/// v1.3: `MSFT_StorageSetting.UpdateHostStorageCache` returned `code`.
pub fn update_cache_failed(code: u32) -> String {
    format!("error updating host storage cache output. result: {code}, err: <nil>")
}

/// v1.3: `MSFT_SmbGlobalMapping.Create` returned `code`.
pub fn smb_create_failed(code: u32) -> String {
    format!("NewSmbGlobalMapping failed. result: {code}, err: <nil>")
}

/// An iSCSI WMI method `class_method` on `target` (`<nil>` for a static
/// method) returned `code`. The iSCSI group's texts are not yet in either
/// release's words: this is the simulated host's own wording, which the
/// HostProcess backend repeats.
pub fn iscsi_failed(class_method: &str, target: &str, code: u32) -> String {
    format!("WMI {class_method} failed (target={target}): code={code}")
}

#[cfg(test)]
mod tests;
