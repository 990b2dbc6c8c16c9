package iotdb

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/apache/iotdb-client-go/client"
	"github.com/apache/thrift/lib/go/thrift"
)

// classify sorts an operation's error into one of Classes; for ClassStatus
// it also returns the TSStatus code (for MULTIPLE_ERROR, the first failing
// sub-status).
func classify(err error) (class string, code int32) {
	var (
		pe  *panicError
		de  *deadlineError
		we  *waitTimeoutError
		ce  *connectError
		ee  *client.ExecutionError
		be  *client.BatchError
		te  thrift.TTransportException
		ne  net.Error
		ope *net.OpError
	)
	switch {
	case errors.As(err, &pe):
		return ClassPanic, 0
	case errors.As(err, &de):
		return ClassDeadline, 0
	case errors.As(err, &we):
		return ClassWaitTimeout, 0
	case errors.As(err, &ce):
		return ClassConnect, 0
	case errors.As(err, &ee):
		return ClassStatus, ee.Code
	case errors.As(err, &be):
		code = client.MultipleError
		for _, s := range be.GetStatuses() {
			if s != nil && s.Code != client.SuccessStatus && s.Code != client.RedirectionRecommend {
				code = s.Code
				break
			}
		}
		return ClassStatus, code
	case errors.As(err, &te), errors.As(err, &ope), errors.As(err, &ne),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNREFUSED):
		return ClassConnect, 0
	}
	return ClassOther, 0
}
