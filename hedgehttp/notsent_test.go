package hedgehttp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/hedgekit/hedge"
)

// notSent says "never left this process" only for failures before any byte was written.
func TestNotSent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}, true},
		{&net.DNSError{Err: "no such host", Name: "x.invalid"}, true},
		{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, true},
		{&tls.CertificateVerificationError{Err: errors.New("x509: certificate signed by unknown authority")}, true},
		{tls.AlertError(40), true},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, false},
		{io.ErrUnexpectedEOF, false},
		{context.DeadlineExceeded, false},
		{errors.New("connection refused"), false}, // a Next of its own making: no proof
	} {
		if got := notSent(tc.err); got != tc.want {
			t.Errorf("notSent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestClassifyAttemptError(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	o := Classify(&attemptError{err: refused, unsent: true})
	if o.Class != hedge.Retriable || !o.Unsent || o.Ejected || !errors.Is(o.Err, syscall.ECONNREFUSED) {
		t.Errorf("unsent: %+v", o)
	}
	o = Classify(&attemptError{err: io.ErrUnexpectedEOF, ejected: true})
	if o.Class != hedge.Retriable || o.Unsent || !o.Ejected {
		t.Errorf("ejected: %+v", o)
	}
	if o := Classify(nil); o.Class != hedge.Success {
		t.Errorf("nil: %+v", o)
	}
}
