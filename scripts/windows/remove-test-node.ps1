<#
.SYNOPSIS
Removes everything scripts/windows/new-test-node.ps1 made, whatever state a
failed run left it in, and fails when something is left.

.DESCRIPTION
In order: the SMB global mappings to the workspace's shares; the iSCSI
sessions, portal, target and virtual disk; the VHDX disks (dismounted, so
that no mount point below the kubelet directories leads to a volume any
more); the kubelet directories (rmdir /s /q, which removes links and mount
points without following them); the shares and the local accounts; the
workspace. Each step goes on when one before it failed; the script exits
non-zero if any failed or if a disk of the workspace is still attached.
#>
param(
    [Parameter(Mandatory = $true)] [string] $Dir,
    [string] $KubeletDir = 'C:\var\lib\kubelet'
)
. "$PSScriptRoot\common.ps1"

Assert-OwnedDir $Dir
$failures = New-Object System.Collections.Generic.List[string]

function Invoke-Step {
    param([Parameter(Mandatory = $true)] [string] $What, [Parameter(Mandatory = $true)] [scriptblock] $Do)
    try {
        & $Do
        Write-Output "removed: $What"
    } catch {
        $failures.Add("${What}: $($_.Exception.Message)")
        Write-Output "::warning::cleanup: ${What}: $($_.Exception.Message)"
    }
}

$manifest = $null
$manifestPath = Join-Path $Dir 'manifest.json'
if (Test-Path $manifestPath) {
    $manifest = Get-Content -Raw -Path $manifestPath | ConvertFrom-Json
}

foreach ($m in @(Get-SmbGlobalMapping -ErrorAction SilentlyContinue | Where-Object { $_.RemotePath -like '\\*\csi-real-node*' })) {
    Invoke-Step "SMB global mapping $($m.RemotePath)" { Remove-SmbGlobalMapping -RemotePath $m.RemotePath -Force }
}

if ($manifest -and ($manifest.iscsi.PSObject.Properties.Name -contains 'iqn')) {
    $iqn = $manifest.iscsi.iqn
    $portal = $manifest.iscsi.portal
    Invoke-Step "iSCSI sessions to $iqn" {
        Get-IscsiTarget | Where-Object { $_.NodeAddress -eq $iqn -and $_.IsConnected } |
            ForEach-Object { Disconnect-IscsiTarget -NodeAddress $_.NodeAddress -Confirm:$false }
    }
    Invoke-Step "iSCSI portal $portal" {
        Get-IscsiTargetPortal | Where-Object { $_.TargetPortalAddress -eq $portal } |
            Remove-IscsiTargetPortal -Confirm:$false
    }
    Invoke-Step 'iSCSI target csi-real-node' { Remove-IscsiServerTarget -TargetName 'csi-real-node' }
    Invoke-Step 'iSCSI virtual disk' { Remove-IscsiVirtualDisk -Path (Join-Path $Dir 'iscsi.vhdx') }
}

foreach ($vhdx in @(Get-ChildItem -Path $Dir -Filter '*.vhdx' -ErrorAction SilentlyContinue)) {
    if ($vhdx.Name -eq 'iscsi.vhdx') { continue }
    $vhd = Get-VHD -Path $vhdx.FullName -ErrorAction SilentlyContinue
    if ($vhd -and $vhd.Attached) {
        Invoke-Step "disk of $($vhdx.Name)" { Dismount-VHD -Path $vhdx.FullName }
    }
}

foreach ($d in @((Join-Path $KubeletDir 'plugins\csi-real-node'), (Join-Path $KubeletDir 'pods\csi-real-node'))) {
    if (Test-Path $d) {
        Invoke-Step $d { Invoke-Native cmd.exe @('/c', 'rmdir', '/s', '/q', $d) }
    }
}

foreach ($share in 'csi-real-node', 'csi-real-node-2') {
    if (Get-SmbShare -Name $share -ErrorAction SilentlyContinue) {
        Invoke-Step "share $share" { Remove-SmbShare -Name $share -Force }
    }
}
foreach ($user in 'csirealnode', 'csirealnode2') {
    if (Get-LocalUser -Name $user -ErrorAction SilentlyContinue) {
        Invoke-Step "account $user" { Remove-LocalUser -Name $user }
    }
}

if (Test-Path $Dir) {
    Invoke-Step $Dir { Invoke-Native cmd.exe @('/c', 'rmdir', '/s', '/q', $Dir) }
}

$left = @(Get-Disk | Where-Object { $_.Location -like "$Dir\*" })
if ($left.Count -gt 0) {
    $failures.Add("disks still attached: $(($left | ForEach-Object { $_.Number }) -join ', ')")
}
if ($failures.Count -gt 0) {
    Write-Output 'Cleanup failed:'
    $failures | ForEach-Object { Write-Output "  $_" }
    exit 1
}
Write-Output "Nothing of $Dir is left."
