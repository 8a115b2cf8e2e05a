<#
.SYNOPSIS
Makes what the real-node suite (tests/real_node/suite.rs) runs against, in a
workspace directory of its own, and writes the manifest its guard reads.

.DESCRIPTION
In -Dir (named csi-real-node...): a random token in csi-real-node.marker;
one VHDX per disk role, attached with Mount-VHD (the Hyper-V PowerShell
module, as kubernetes-csi/csi-proxy's .github/workflows/windows.yml
installs it):
  blank                1 GiB, RAW
  boundary             1 GiB, RAW (the boundary-level test's own)
  gpt-data             1 GiB, GPT, a 300 MiB basic data partition, NTFS, a file
  mbr-system-reserved  1 GiB, MBR, 100 MiB active "System Reserved" NTFS,
                       then a data partition, NTFS, a file
  read-only            1 GiB, RAW, Set-Disk -IsReadOnly
  offline              1 GiB, GPT, one NTFS partition with a file, Set-Disk -IsOffline
The file (csi-real-node.txt) holds the token: a test that reads it back
knows the disk was mounted, not formatted. Two local accounts and two
shares of this machine (\\COMPUTERNAME\csi-real-node for the first,
...\csi-real-node-2 for the second), as csi-proxy's integration tests make
theirs (integrationtests/smb_test.go). An iSCSI target on this machine
(loopback, the iSCSI Target Server feature, as csi-proxy's
integrationtests/iscsi_ps_scripts.go sets one up) when the runner allows;
otherwise the manifest says why, and the iSCSI test prints it and stops.

On GitHub Actions it exports CSI_REAL_NODE_DIR and
CSI_REAL_NODE_SMB_PASSWORD (masked) to the later steps.
scripts/windows/remove-test-node.ps1 removes all of it.
#>
param(
    [Parameter(Mandatory = $true)] [string] $Dir,
    [string] $KubeletDir = 'C:\var\lib\kubelet'
)
. "$PSScriptRoot\common.ps1"

Assert-OwnedDir $Dir
if (Test-Path $Dir) {
    throw "$Dir exists: remove it first (scripts/windows/remove-test-node.ps1)"
}
New-Item -ItemType Directory -Path $Dir | Out-Null
$Dir = (Resolve-Path $Dir).Path

$token = [guid]::NewGuid().ToString('N')
[System.IO.File]::WriteAllText((Join-Path $Dir 'csi-real-node.marker'), $token)

Write-Output 'Installing the Hyper-V PowerShell module (New-VHD, Mount-VHD)'
Install-WindowsFeature -Name Hyper-V-PowerShell | Out-Null

$basicData = '{ebd0a0a2-b9e5-4433-87c0-68b6b72699c7}'
$disks = New-Object System.Collections.Generic.List[object]

# A VHDX of the workspace, attached; its disk number. The guard finds it by
# MSFT_Disk.Location, which must be the file's path: checked here first.
function New-TestDisk {
    param([Parameter(Mandatory = $true)] [string] $Role)
    $path = Join-Path $Dir "$Role.vhdx"
    New-VHD -Path $path -SizeBytes 1GB -Dynamic | Out-Null
    Mount-VHD -Path $path
    $number = (Get-VHD -Path $path).DiskNumber
    $disk = Get-Disk -Number $number
    if ($disk.Location -ne $path) {
        throw "disk $number, made of $path, has Location '$($disk.Location)': the test guard would refuse it"
    }
    if ($disk.IsOffline) { Set-Disk -Number $number -IsOffline $false }
    if ($disk.IsReadOnly) { Set-Disk -Number $number -IsReadOnly $false }
    $disks.Add([ordered]@{ role = $Role; vhdx = $path })
    return $number
}

# Writes the token in csi-real-node.txt on a partition, through an access
# path in the workspace that is removed again.
function Write-TestData {
    param(
        [Parameter(Mandatory = $true)] [string] $Role,
        [Parameter(Mandatory = $true)] $Partition
    )
    $mount = Join-Path $Dir "mnt-$Role"
    New-Item -ItemType Directory -Path $mount | Out-Null
    $Partition | Add-PartitionAccessPath -AccessPath "$mount\"
    [System.IO.File]::WriteAllText((Join-Path $mount 'csi-real-node.txt'), $token)
    $Partition | Remove-PartitionAccessPath -AccessPath "$mount\"
    Remove-Item -Path $mount
}

function Format-TestVolume {
    param([Parameter(Mandatory = $true)] $Partition, [string] $Label = 'csi-real-node')
    $Partition | Format-Volume -FileSystem NTFS -NewFileSystemLabel $Label -Confirm:$false | Out-Null
}

Write-Output 'Making the disks'
New-TestDisk -Role 'blank' | Out-Null
New-TestDisk -Role 'boundary' | Out-Null

$n = New-TestDisk -Role 'gpt-data'
Initialize-Disk -Number $n -PartitionStyle GPT
$p = New-Partition -DiskNumber $n -Size 300MB -GptType $basicData
Format-TestVolume -Partition $p
Write-TestData -Role 'gpt-data' -Partition $p

$n = New-TestDisk -Role 'mbr-system-reserved'
Initialize-Disk -Number $n -PartitionStyle MBR
$reserved = New-Partition -DiskNumber $n -Size 100MB -MbrType IFS -IsActive
Format-TestVolume -Partition $reserved -Label 'System Reserved'
$p = New-Partition -DiskNumber $n -UseMaximumSize -MbrType IFS
Format-TestVolume -Partition $p
Write-TestData -Role 'mbr-system-reserved' -Partition $p

$n = New-TestDisk -Role 'read-only'
Set-Disk -Number $n -IsReadOnly $true

$n = New-TestDisk -Role 'offline'
Initialize-Disk -Number $n -PartitionStyle GPT
$p = New-Partition -DiskNumber $n -UseMaximumSize -GptType $basicData
Format-TestVolume -Partition $p
Write-TestData -Role 'offline' -Partition $p
Set-Disk -Number $n -IsOffline $true

Write-Output 'Making the SMB accounts and shares'
# Upper and lower case, digits and a sign, whatever the password policy.
$letters = [char[]]'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789'
$password = (-join (1..20 | ForEach-Object { Get-Random -InputObject $letters })) + 'Aa1!'
Write-Output "::add-mask::$password"
$secure = ConvertTo-SecureString -String $password -AsPlainText -Force
$accounts = @(
    @{ User = 'csirealnode'; Share = 'csi-real-node'; Path = (Join-Path $Dir 'share') },
    @{ User = 'csirealnode2'; Share = 'csi-real-node-2'; Path = (Join-Path $Dir 'share2') }
)
foreach ($a in $accounts) {
    New-LocalUser -Name $a.User -Password $secure -AccountNeverExpires -PasswordNeverExpires | Out-Null
    New-Item -ItemType Directory -Path $a.Path | Out-Null
    New-SmbShare -Name $a.Share -Path $a.Path -FullAccess $a.User | Out-Null
    # The share grants the account; NTFS must too.
    Invoke-Native icacls.exe @($a.Path, '/grant', "$($a.User):(OI)(CI)M")
}
$server = $env:COMPUTERNAME
$smb = [ordered]@{
    share        = "\\$server\$($accounts[0].Share)"
    user         = $accounts[0].User
    second_share = "\\$server\$($accounts[1].Share)"
    second_user  = $accounts[1].User
    local_path   = $accounts[0].Path
}

Write-Output 'Making an iSCSI target on this machine, if the runner allows one'
try {
    $feature = Install-WindowsFeature -Name FS-iSCSITarget-Server
    if (-not $feature.Success) { throw "Install-WindowsFeature FS-iSCSITarget-Server: $($feature.ExitCode)" }
    if ("$($feature.RestartNeeded)" -eq 'Yes') { throw 'FS-iSCSITarget-Server needs a restart' }
    # A target on the initiator's own machine (loopback) must be allowed.
    Set-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\iSCSI Target' -Name AllowLoopBack -Value 1
    Restart-Service -Name WinTarget
    Set-Service -Name MSiSCSI -StartupType Automatic
    Start-Service -Name MSiSCSI
    $address = Get-NetIPAddress -AddressFamily IPv4 |
        Where-Object { $_.IPAddress -ne '127.0.0.1' -and $_.PrefixOrigin -ne 'WellKnown' } |
        Select-Object -First 1 -ExpandProperty IPAddress
    if (-not $address) { throw 'no IPv4 address but loopback' }
    $backing = Join-Path $Dir 'iscsi.vhdx'
    New-IscsiVirtualDisk -Path $backing -SizeBytes 256MB | Out-Null
    $target = New-IscsiServerTarget -TargetName 'csi-real-node' -InitiatorIds @('Iqn:*')
    Add-IscsiVirtualDiskTargetMapping -TargetName 'csi-real-node' -DevicePath $backing | Out-Null
    $iscsi = [ordered]@{ portal = $address; iqn = "$($target.TargetIqn)" }
} catch {
    $why = "no iSCSI target on this runner: $($_.Exception.Message)"
    Write-Output "::warning::$why"
    $iscsi = [ordered]@{ skipped = $why }
}

$plugins = Join-Path $KubeletDir 'plugins\csi-real-node'
$pods = Join-Path $KubeletDir 'pods\csi-real-node'
New-Item -ItemType Directory -Force -Path $plugins, $pods | Out-Null

$manifest = [ordered]@{
    root    = $Dir
    token   = $token
    kubelet = @($plugins, $pods)
    disks   = $disks.ToArray()
    smb     = $smb
    iscsi   = $iscsi
}
[System.IO.File]::WriteAllText((Join-Path $Dir 'manifest.json'), ($manifest | ConvertTo-Json -Depth 5))

Set-StepEnv -Name 'CSI_REAL_NODE_DIR' -Value $Dir
Set-StepEnv -Name 'CSI_REAL_NODE_SMB_PASSWORD' -Value $password

$columns = @('Number', 'FriendlyName', 'PartitionStyle', 'IsOffline', 'IsReadOnly', 'IsSystem', 'IsBoot', 'Size', 'Location')
Get-Disk | Format-Table -AutoSize -Property $columns
Write-Output "Workspace ready: $Dir"
