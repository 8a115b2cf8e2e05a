// gobench-server SOCKET: grpc-go serving disk v1 GetDiskStats on a Unix
// socket, every answer total_bytes = 1 GiB. Runs until killed.
package main

import (
	"context"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"

	"csiproxyclient/grpcgopeer/disk"
)

type constant struct{}

func (constant) GetDiskStats(context.Context, *disk.GetDiskStatsRequest) (*disk.GetDiskStatsResponse, error) {
	return &disk.GetDiskStatsResponse{TotalBytes: 1 << 30}, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gobench-server SOCKET")
		os.Exit(2)
	}
	socket := os.Args[1]
	_ = os.Remove(socket)
	listener, err := net.Listen("unix", socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gobench-server:", err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	disk.Register(server, constant{})
	if err := server.Serve(listener); err != nil {
		fmt.Fprintln(os.Stderr, "gobench-server:", err)
		os.Exit(1)
	}
}
