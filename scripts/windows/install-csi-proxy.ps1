<#
.SYNOPSIS
Builds csi-proxy from its public release tag and runs it as the Windows
service csiproxy, as kubernetes-csi/csi-proxy's own
.github/workflows/windows.yml installs it (sc.exe create, restart on
failure, logs to C:\etc\kubernetes\logs).

.DESCRIPTION
The tag is cloned from https://github.com/kubernetes-csi/csi-proxy and its
commit checked against the one pinned here (a moved tag fails the run).
Built with the Go on PATH and the release's vendored modules. Waits until
the filesystem v1 pipe answers. scripts/windows/uninstall-csi-proxy.ps1
removes the service and the files.
#>
param(
    [Parameter(Mandatory = $true)] [ValidateSet('v1.3.0', 'v1.1.3')] [string] $Version,
    [string] $Work = (Join-Path $env:RUNNER_TEMP 'csi-proxy-src')
)
. "$PSScriptRoot\common.ps1"

# The commits the tags named when this was written.
$pinned = @{
    'v1.3.0' = '832fe147320a53fb52126d88dc73ffb5b4b4ef2b'
    'v1.1.3' = '0211feaf25cd165167e86dda8d2782876647d257'
}
$bin = 'C:\etc\kubernetes\node\bin'
$logs = 'C:\etc\kubernetes\logs'
$src = Join-Path $Work $Version

if (Get-Service -Name csiproxy -ErrorAction SilentlyContinue) {
    throw 'a csiproxy service exists already: run uninstall-csi-proxy.ps1 first'
}
Invoke-Native git @('clone', '--quiet', '--depth', '1', '--branch', $Version, 'https://github.com/kubernetes-csi/csi-proxy', $src)
$commit = (& git -C $src rev-parse HEAD).Trim()
if ($commit -ne $pinned[$Version]) {
    throw "csi-proxy $Version is at $commit, not the pinned $($pinned[$Version])"
}

New-Item -ItemType Directory -Force -Path $bin, $logs | Out-Null
$env:GOFLAGS = '-mod=vendor'
$env:GOTOOLCHAIN = 'local'
Push-Location $src
try {
    Invoke-Native go @('version')
    Invoke-Native go @('build', '-o', (Join-Path $bin 'csi-proxy.exe'), './cmd/csi-proxy')
} finally {
    Pop-Location
}

$flags = "-v=5 -windows-service -log_file=$logs\csi-proxy.log -logtostderr=false"
Invoke-Native sc.exe @('create', 'csiproxy', 'start=', 'auto', 'binPath=', "$bin\csi-proxy.exe $flags")
Invoke-Native sc.exe @('failure', 'csiproxy', 'reset=', '0', 'actions=', 'restart/10000')
Invoke-Native sc.exe @('start', 'csiproxy')

$deadline = (Get-Date).AddSeconds(60)
while (-not (Test-Path '\\.\pipe\csi-proxy-filesystem-v1')) {
    if ((Get-Date) -gt $deadline) {
        & sc.exe query csiproxy
        Get-Content -Path "$logs\csi-proxy.log" -Tail 50 -ErrorAction SilentlyContinue
        throw "csi-proxy $Version served no pipe within 60 s"
    }
    Start-Sleep -Seconds 1
}
& sc.exe query csiproxy
[System.IO.Directory]::GetFiles('\\.\pipe\') | Where-Object { $_ -like '*csi-proxy*' }
Write-Output "csi-proxy $Version ($commit) runs as the service csiproxy"
