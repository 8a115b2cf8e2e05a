<#
.SYNOPSIS
Stops and deletes the csiproxy service scripts/windows/install-csi-proxy.ps1
made, prints the end of its log, and removes its binary and log.
#>
. "$PSScriptRoot\common.ps1"

$log = 'C:\etc\kubernetes\logs\csi-proxy.log'
$exe = 'C:\etc\kubernetes\node\bin\csi-proxy.exe'
$service = Get-Service -Name csiproxy -ErrorAction SilentlyContinue
if ($service) {
    if ($service.Status -ne 'Stopped') {
        Stop-Service -Name csiproxy -Force
        $service.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(30))
    }
    Invoke-Native sc.exe @('delete', 'csiproxy')
}
if (Test-Path $log) {
    Write-Output '--- the end of csi-proxy.log'
    Get-Content -Path $log -Tail 100
    Remove-Item -Path $log
}
if (Test-Path $exe) { Remove-Item -Path $exe }
if (Get-Service -Name csiproxy -ErrorAction SilentlyContinue) { throw 'the csiproxy service is still there' }
Write-Output 'csiproxy removed'
