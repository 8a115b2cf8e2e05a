//! Both releases' texts for each failed WMI method, exactly, and how the
//! client classifies them: a WMI method result, never a Win32 error.

use super::*;
use crate::{ErrorKind, HostCode};

const VOL: &str = r"\\?\Volume{0b6f4b3e-3c1a-4e8e-9d55-7a1f2c3d4e5f}\";

/// The kind and code a client reads from `text`.
fn read(text: &str) -> (ErrorKind, Option<HostCode>) {
    (ErrorKind::of_host_text(text), HostCode::find(text))
}

#[test]
fn v1_3_puts_the_result_beside_a_nil_error() {
    use ProxyRelease::V1_3;
    let cases = [
        (
            initialize_failed(V1_3, 3, 41001),
            "failed to initializing disk 3: result 41001, error: %!w(<nil>)",
            Some(41001),
        ),
        (
            create_partition_failed(V1_3, 3, 40000),
            "error creating partition on disk 3. result: 40000, err: <nil>",
            Some(40000),
        ),
        (
            set_disk_state_failed(V1_3, 0, false, 41009),
            "setting disk 0 attach state (isOnline: false): result 41009, error: %!w(<nil>)",
            Some(41009),
        ),
        (
            format_failed(V1_3, VOL, 5),
            &format!("error formatting volume ({VOL}). result: 5, error: <nil>"),
            Some(5),
        ),
        // v1.3 drops Resize's result from its text.
        (
            resize_failed(V1_3, VOL, 0, 3 << 30, 4097),
            &format!("error resizing volume ({VOL}). size:0, finalSize 3221225472, error: <nil>"),
            None,
        ),
        (
            refresh_failed(3, 2),
            "error rescan disk (3). result 2, error: <nil>",
            Some(2),
        ),
        (
            flush_failed(VOL, 4),
            &format!("error writing volume ({VOL}) cache. result: 4, error: <nil>"),
            Some(4),
        ),
        (
            update_cache_failed(2),
            "error updating host storage cache output. result: 2, err: <nil>",
            Some(2),
        ),
        (
            smb_create_failed(1219),
            "NewSmbGlobalMapping failed. result: 1219, err: <nil>",
            Some(1219),
        ),
    ];
    for (text, want, code) in cases {
        assert_eq!(text, want);
        assert_eq!(
            read(&text),
            (ErrorKind::Other, code.map(HostCode::WmiResult)),
            "{text}"
        );
    }
}

#[test]
fn v1_1_quotes_the_cmdlet_record_with_its_storage_code() {
    use ProxyRelease::V1_1;
    let init = initialize_failed(V1_1, 3, 41001);
    assert!(
        init.starts_with(
            "error initializing disk 3: Initialize-Disk : The disk has already been initialized.\r\n\
             At line:1 char:1\r\n+ Initialize-Disk -Number 3 -PartitionStyle GPT\r\n"
        ),
        "{init}"
    );
    assert!(
        init.ends_with(
            "FullyQualifiedErrorId : StorageWMI 41001,Initialize-Disk\r\n \r\n, exit status 1"
        ),
        "{init}"
    );
    let part = create_partition_failed(V1_1, 3, 40000);
    assert!(
        part.starts_with(
            "error creating partition on disk 3: New-Partition : Not enough available capacity\r\n"
        ),
        "{part}"
    );
    let offline = set_disk_state_failed(V1_1, 0, false, 41009);
    assert!(
        offline.starts_with(
            "error setting disk attach state. cmd: (Get-Disk -Number 0) | Set-Disk -IsOffline $true, \
             output: Set-Disk : Operation not supported on a critical disk.\r\n"
        ),
        "{offline}"
    );
    assert!(offline.ends_with(", error: exit status 1"), "{offline}");
    let format = format_failed(V1_1, VOL, 42010);
    assert!(
        format.starts_with(
            "error formatting volume. cmd: Get-Volume -UniqueId \"$Env:volumeID\" | \
             Format-Volume -FileSystem ntfs -Confirm:$false, output: Format-Volume : "
        ),
        "{format}"
    );
    let resize = resize_failed(V1_1, VOL, 0, 3 << 30, 4097);
    assert!(
        resize.starts_with(
            "error resizing volume. cmd: Get-Volume -UniqueId \"$Env:volumeID\" | Get-Partition | \
             Resize-Partition -Size 3221225472, output: Resize-Partition : Size Not Supported\r\n"
        ),
        "{resize}"
    );
    assert!(
        resize.ends_with(" size:0, finalSize 3221225472, error: exit status 1"),
        "{resize}"
    );
    for (text, code) in [
        (init, 41001),
        (part, 40000),
        (offline, 41009),
        (format, 42010),
        (resize, 4097),
        // Invalid Parameter: not Windows' text of Win32 87.
        (initialize_failed(V1_1, 3, 5), 5),
    ] {
        assert_eq!(
            read(&text),
            (ErrorKind::Other, Some(HostCode::WmiResult(code))),
            "{text}"
        );
    }
}
