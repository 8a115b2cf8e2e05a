<#
.SYNOPSIS
Parses every script under scripts/windows/ with PowerShell's own parser
(and lints it with PSScriptAnalyzer's errors where the module is
installed): what the Linux CI, which has no PowerShell, cannot check.
#>
. "$PSScriptRoot\common.ps1"

$bad = 0
foreach ($script in @(Get-ChildItem -Path $PSScriptRoot -Filter '*.ps1')) {
    $tokens = $null
    $errors = $null
    [System.Management.Automation.Language.Parser]::ParseFile($script.FullName, [ref]$tokens, [ref]$errors) | Out-Null
    foreach ($e in $errors) {
        Write-Output "::error file=scripts/windows/$($script.Name),line=$($e.Extent.StartLineNumber)::$($e.Message)"
        $bad++
    }
    Write-Output "parsed: $($script.Name) ($($errors.Count) errors)"
}
if (Get-Module -ListAvailable -Name PSScriptAnalyzer) {
    $findings = @(Invoke-ScriptAnalyzer -Path $PSScriptRoot -Severity Error)
    foreach ($f in $findings) {
        Write-Output "::error file=scripts/windows/$($f.ScriptName),line=$($f.Line)::$($f.RuleName): $($f.Message)"
        $bad++
    }
    Write-Output "PSScriptAnalyzer: $($findings.Count) errors"
} else {
    Write-Output 'PSScriptAnalyzer is not installed here: parsed only'
}
if ($bad -gt 0) { exit 1 }
