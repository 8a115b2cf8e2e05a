// Package disk holds the one call of disk v1 (proto/disk/v1/api.proto) that
// the grpc-go peer of scripts/bench-grpc-go.sh speaks, GetDiskStats, written
// by hand: the two messages as golang/protobuf 1.3 structs (their tags are
// all that package's table-driven encoder needs), and the service as
// grpc-go's unary method table. Nothing is generated, so the peer builds
// from Debian's packages alone, without protoc.
package disk

import (
	"context"

	"github.com/golang/protobuf/proto"
	"google.golang.org/grpc"
)

// Method is the full name of GetDiskStats on the wire.
const Method = "/v1.Disk/GetDiskStats"

// GetDiskStatsRequest asks for the size of disk DiskNumber.
type GetDiskStatsRequest struct {
	DiskNumber uint32 `protobuf:"varint,1,opt,name=disk_number,json=diskNumber,proto3" json:"disk_number,omitempty"`
}

func (m *GetDiskStatsRequest) Reset()         { *m = GetDiskStatsRequest{} }
func (m *GetDiskStatsRequest) String() string { return proto.CompactTextString(m) }
func (*GetDiskStatsRequest) ProtoMessage()    {}

// GetDiskStatsResponse is the size of a disk in bytes.
type GetDiskStatsResponse struct {
	TotalBytes int64 `protobuf:"varint,1,opt,name=total_bytes,json=totalBytes,proto3" json:"total_bytes,omitempty"`
}

func (m *GetDiskStatsResponse) Reset()         { *m = GetDiskStatsResponse{} }
func (m *GetDiskStatsResponse) String() string { return proto.CompactTextString(m) }
func (*GetDiskStatsResponse) ProtoMessage()    {}

// Server answers GetDiskStats.
type Server interface {
	GetDiskStats(context.Context, *GetDiskStatsRequest) (*GetDiskStatsResponse, error)
}

// Register serves srv as the v1.Disk service of s (GetDiskStats only).
func Register(s *grpc.Server, srv Server) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "v1.Disk",
		HandlerType: (*Server)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "GetDiskStats", Handler: handle}},
		Metadata:    "disk/v1/api.proto",
	}, srv)
}

func handle(srv interface{}, ctx context.Context, decode func(interface{}) error, intercept grpc.UnaryServerInterceptor) (interface{}, error) {
	request := &GetDiskStatsRequest{}
	if err := decode(request); err != nil {
		return nil, err
	}
	call := func(ctx context.Context, request interface{}) (interface{}, error) {
		return srv.(Server).GetDiskStats(ctx, request.(*GetDiskStatsRequest))
	}
	if intercept == nil {
		return call(ctx, request)
	}
	return intercept(ctx, request, &grpc.UnaryServerInfo{Server: srv, FullMethod: Method}, call)
}

// Client calls GetDiskStats on one connection.
type Client struct{ Conn *grpc.ClientConn }

// GetDiskStats sends one request and waits for its answer.
func (c Client) GetDiskStats(ctx context.Context, request *GetDiskStatsRequest) (*GetDiskStatsResponse, error) {
	answer := &GetDiskStatsResponse{}
	if err := c.Conn.Invoke(ctx, Method, request, answer); err != nil {
		return nil, err
	}
	return answer, nil
}
