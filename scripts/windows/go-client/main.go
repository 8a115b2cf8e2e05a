// The control client of scripts/real-proxy.sh: csi-proxy's own Go client
// package (go-winio and grpc-go underneath) asks filesystem v1 twice whether
// a path exists, on one connection, and prints one line per answer:
//
//	go client call N: exists:BOOL after DURATION (this call DURATION)
//
// real-proxy.sh copies this file into a csi-proxy release's source tree
// (cmd/csi-proxy-client-control) and builds it there with that release's
// vendored modules, so the control speaks exactly that release's client.
// Any failure is printed with "err" and ends the program with status 1.
//
//	go-client.exe [PATH]   (default C:\var\lib\kubelet, the proxy's working dir)
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	fsapi "github.com/kubernetes-csi/csi-proxy/client/api/filesystem/v1"
	fsclient "github.com/kubernetes-csi/csi-proxy/client/groups/filesystem/v1"
)

const calls = 2

func main() {
	path := `C:\var\lib\kubelet`
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	began := time.Now()
	conn, err := fsclient.NewClient()
	if err != nil {
		fail("connect err %v", err)
	}
	for n := 1; n <= calls; n++ {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		answer, err := conn.PathExists(ctx, &fsapi.PathExistsRequest{Path: path})
		cancel()
		if err != nil {
			fail("go client call %d: err %v", n, err)
		}
		fmt.Printf("go client call %d: exists:%t after %v (this call %v)\n",
			n, answer.GetExists(), time.Since(began), time.Since(sent))
	}
	if err := conn.Close(); err != nil {
		fail("close err %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
	os.Exit(1)
}
