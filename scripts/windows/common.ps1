# What every script under scripts/windows/ starts with (dot-sourced): stop
# at the first error, no progress bars in CI logs, and the two helpers the
# scripts share. Windows PowerShell 5.1, as GitHub's `shell: powershell`.
Set-StrictMode -Version 3.0
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# Runs a program and fails on a non-zero exit code, which PowerShell
# itself lets pass.
function Invoke-Native {
    param(
        [Parameter(Mandatory = $true)] [string] $FilePath,
        [string[]] $ArgumentList = @()
    )
    & $FilePath @ArgumentList
    if ($LASTEXITCODE -ne 0) {
        throw "$FilePath $($ArgumentList -join ' '): exit code $LASTEXITCODE"
    }
}

# Sets a variable for this script and, on GitHub Actions, for the steps
# after it ($GITHUB_ENV, written without a byte order mark).
function Set-StepEnv {
    param(
        [Parameter(Mandatory = $true)] [string] $Name,
        [Parameter(Mandatory = $true)] [string] $Value
    )
    Set-Item -Path "env:$Name" -Value $Value
    if ($env:GITHUB_ENV) {
        [System.IO.File]::AppendAllText($env:GITHUB_ENV, "$Name=$Value`n")
    }
}

# A directory the real-node scripts may make and remove: named
# csi-real-node..., as the test guard (tests/real_node/guard.rs) requires.
function Assert-OwnedDir {
    param([Parameter(Mandatory = $true)] [string] $Path)
    if ((Split-Path -Leaf $Path) -notlike 'csi-real-node*') {
        throw "$Path is not named csi-real-node...: refusing to touch it"
    }
}
