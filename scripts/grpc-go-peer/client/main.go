// SERVER_PID=PID gobench-client SOCKET N: grpc-go calling disk v1
// GetDiskStats on a Unix socket, one connection: 2000 calls to warm up, N
// timed sequential calls, then 64 goroutines of 500 calls each. Prints one
// line, as benches/grpc_go_peer.rs does for the crate's client:
//
//	RESULT client=go seq_us= p50_us= p99_us= conc_cps= cli_cpu_seq_us=
//	       srv_cpu_seq_us= cli_cpu_conc_us= srv_cpu_conc_us=
//
// the CPU figures (utime + stime from /proc, this process and SERVER_PID,
// the warm-up left out) in µs per call. Any failed call ends it with status 1.
package main

import (
	"context"
	"fmt"
	"io/ioutil"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"csiproxyclient/grpcgopeer/disk"
)

const (
	warmUp        = 2000
	goroutines    = 64
	callsEach     = 500
	microsPerTick = 10000.0 // USER_HZ 100
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: SERVER_PID=PID gobench-client SOCKET N")
		os.Exit(2)
	}
	socket := os.Args[1]
	n, err := strconv.Atoi(os.Args[2])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "gobench-client: N must be a positive number of calls")
		os.Exit(2)
	}
	conn, err := grpc.Dial(socket, grpc.WithInsecure(),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}))
	if err != nil {
		fail(err)
	}
	client := disk.Client{Conn: conn}
	call := func() {
		answer, err := client.GetDiskStats(context.Background(), &disk.GetDiskStatsRequest{})
		if err != nil {
			fail(err)
		}
		if answer.TotalBytes <= 0 {
			fail(fmt.Errorf("bad answer %v", answer))
		}
	}

	for i := 0; i < warmUp; i++ {
		call()
	}
	server := os.Getenv("SERVER_PID")
	cliStart, srvStart := cpuTicks("self"), cpuTicks(server)
	latencies := make([]float64, n)
	began := time.Now()
	for i := range latencies {
		sent := time.Now()
		call()
		latencies[i] = micros(time.Since(sent))
	}
	seqUs := micros(time.Since(began)) / float64(n)
	sort.Float64s(latencies)
	cliSeq, srvSeq := cpuTicks("self"), cpuTicks(server)

	var wg sync.WaitGroup
	began = time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < callsEach; i++ {
				call()
			}
		}()
	}
	wg.Wait()
	concurrent := goroutines * callsEach
	concCps := float64(concurrent) / time.Since(began).Seconds()
	cliConc, srvConc := cpuTicks("self"), cpuTicks(server)

	fmt.Printf("RESULT client=go seq_us=%.2f p50_us=%.2f p99_us=%.2f conc_cps=%.0f "+
		"cli_cpu_seq_us=%.2f srv_cpu_seq_us=%.2f cli_cpu_conc_us=%.2f srv_cpu_conc_us=%.2f\n",
		seqUs, latencies[n/2], latencies[n*99/100], concCps,
		perCall(cliStart, cliSeq, n), perCall(srvStart, srvSeq, n),
		perCall(cliSeq, cliConc, concurrent), perCall(srvSeq, srvConc, concurrent))
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func perCall(from, to int64, calls int) float64 {
	return float64(to-from) * microsPerTick / float64(calls)
}

// cpuTicks is utime + stime of process pid ("self" for this one) in clock
// ticks, -1 when /proc cannot say.
func cpuTicks(pid string) int64 {
	if pid == "" {
		return -1
	}
	stat, err := ioutil.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1
	}
	// The fields after the command name, which may hold spaces: state is [0].
	text := string(stat)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
	if len(fields) < 13 {
		return -1
	}
	user, err1 := strconv.ParseInt(fields[11], 10, 64)
	system, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return user + system
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gobench-client:", err)
	os.Exit(1)
}
