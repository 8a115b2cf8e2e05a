/*
 * bcryptprimitives.dll shim for running Rust test binaries under Wine.
 *
 * Rust's standard library (1.78 and later) on Windows gets random bytes from
 * ProcessPrng, exported by bcryptprimitives.dll. Wine 8 (Debian bookworm)
 * ships a bcryptprimitives.dll without that export, so every Rust binary
 * fails to load. This DLL exports ProcessPrng and implements it with
 * RtlGenRandom (SystemFunction036 in advapi32), which Wine has always had.
 *
 * scripts/test-windows.sh builds it with mingw-w64, puts it beside the test
 * binaries, and makes Wine prefer it with WINEDLLOVERRIDES=bcryptprimitives=n,b.
 * It is a test-harness shim only: it is never shipped with the crate.
 */
#include <windows.h>

/* RtlGenRandom; declared by hand to avoid depending on ntsecapi.h details. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000u ? 0x40000000u : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    /* Like Windows' ProcessPrng, which never fails. */
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
