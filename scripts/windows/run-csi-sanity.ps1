<#
.SYNOPSIS
csi-sanity (kubernetes-csi/csi-test, -SanityVersion) against the example
plugin in HostProcess mode on this machine: every Node and Identity spec
that needs no controller.

.DESCRIPTION
csi-sanity is built with `go install ...@VERSION`, through Go's module
proxy and checksum database. The plugin is started as
`PLUGIN --host-process --endpoint unix:///csi-real-node-sanity/csi.sock`
from C:\, so that the plugin (Rust, uds_windows) and csi-sanity (Go) name
the same AF_UNIX socket, C:\csi-real-node-sanity\csi.sock, by a path both
parse as absolute. Without --controller-service the plugin offers no
controller, so csi-sanity creates no volume and no spec can reach a disk:
the specs run are those of argument checking, capabilities and node info,
against the real host. Exits with csi-sanity's status; stops the plugin
and removes its directories whatever happened.
#>
param(
    [Parameter(Mandatory = $true)] [string] $Plugin,
    [string] $SanityVersion = 'v5.3.1'
)
. "$PSScriptRoot\common.ps1"

$Plugin = (Resolve-Path $Plugin).Path
$dir = 'C:\csi-real-node-sanity'
$kubelet = 'C:\var\lib\kubelet'
$staging = Join-Path $kubelet 'plugins\csi-real-node-sanity\staging'
$mount = Join-Path $kubelet 'pods\csi-real-node-sanity\mount'
Assert-OwnedDir $dir
New-Item -ItemType Directory -Force -Path $dir | Out-Null

$env:GOBIN = Join-Path $dir 'bin'
Invoke-Native go @('install', "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity@$SanityVersion")
$sanity = Join-Path $env:GOBIN 'csi-sanity.exe'

$endpoint = 'unix:///csi-real-node-sanity/csi.sock'
$status = 1
Push-Location 'C:\'
$plugin = Start-Process -FilePath $Plugin -PassThru -NoNewWindow `
    -RedirectStandardOutput (Join-Path $dir 'plugin.log') -RedirectStandardError (Join-Path $dir 'plugin.err.log') `
    -ArgumentList @('--host-process', '--endpoint', $endpoint, '--node-id', 'csi-real-node-sanity')
try {
    $deadline = (Get-Date).AddSeconds(60)
    while (-not (Test-Path (Join-Path $dir 'csi.sock'))) {
        if ($plugin.HasExited) { throw "the plugin exited with $($plugin.ExitCode)" }
        if ((Get-Date) -gt $deadline) { throw 'the plugin made no socket within 60 s' }
        Start-Sleep -Seconds 1
    }
    $arguments = @(
        '--csi.endpoint', $endpoint,
        '--csi.stagingdir', $staging,
        '--csi.mountdir', $mount,
        '--ginkgo.focus', 'Node Service|Identity Service',
        '--ginkgo.no-color'
    )
    & $sanity @arguments
    $status = $LASTEXITCODE
} finally {
    Pop-Location
    if (-not $plugin.HasExited) { Stop-Process -Id $plugin.Id -Force }
    Write-Output '--- the plugin log'
    Get-Content -Path (Join-Path $dir 'plugin.log'), (Join-Path $dir 'plugin.err.log') -Tail 200 -ErrorAction SilentlyContinue
    foreach ($d in @((Split-Path $staging), (Split-Path $mount), $dir)) {
        if (Test-Path $d) { & cmd.exe /c rmdir /s /q $d }
    }
}
exit $status
