package hedgegrpc

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// StreamClient is a grpc.StreamClientInterceptor. Server-streaming calls are hedged up to
// their commit point, the first response message: every attempt opens its own stream, sends
// the request and waits for its first message (or the end of an empty stream); the first to
// get one wins, the others are cancelled, and the caller reads the rest of the winner's
// stream. Once a message has reached the caller nothing is sent again: a stream that fails
// after its first message returns its error. Client-streaming and bidi calls are hedged as
// gRFC A6 says (see Config.ReplayBuffer): every sent message is kept and replayed in order on
// each copy, and the call commits to the first attempt that receives a response message, or,
// once the messages sent outgrow the buffer, to the attempt that has answered, if one has,
// else the earliest attempt still running. Such a call needs its method's descriptor, found
// through Config.Descriptors, to decode a first response before the caller asks for it (as a
// dynamic message when no generated type is registered): a method whose descriptor is not
// found passes through.
//
// The race starts at the caller's first RecvMsg, which gives the response type. A caller that
// asks for Header before its first RecvMsg gets an unhedged stream: the headers of a stream
// not yet chosen are nobody's. For the same reason a client-streaming or bidi call whose
// Header is asked for before it has committed commits then, to the earliest attempt still
// running, as gRPC's own retries commit at the response headers.
func (i *Interceptor) StreamClient(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, fullMethod string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if !i.built() {
		co := splitOptions(opts)
		co.finish(errUnbuilt)
		return nil, errUnbuilt
	}
	if desc.ClientStreams {
		if rs := i.replayStreamFor(ctx, desc, cc, fullMethod, streamer, opts); rs != nil {
			return rs, nil
		}
		if desc.ServerStreams {
			ctx = streamCtx{ctx}
		}
		return streamer(ctx, desc, cc, fullMethod, opts...)
	}
	if !desc.ServerStreams {
		return streamer(ctx, desc, cc, fullMethod, opts...)
	}
	m := i.method(fullMethod)
	if m == nil { // Config.MaxMethods methods have policies: sent as it is
		return streamer(streamCtx{ctx}, desc, cc, fullMethod, opts...)
	}
	return &hedgedStream{ctx: ctx, i: i, m: m, desc: desc, cc: cc, method: fullMethod, streamer: streamer, co: splitOptions(opts), ready: make(chan struct{})}, nil
}

// hedgedStream is a server-streaming call. Its methods are called from one goroutine at a
// time for sending and one for receiving, as grpc.ClientStream's are; before the race both
// kinds happen in the caller's goroutine (generated code sends and closes before returning
// the stream). Header may be called from another goroutine while RecvMsg runs the race, as
// a plain stream's may: the first of the two to come starts the stream, and the other
// waits for it (ready).
type hedgedStream struct {
	ctx      context.Context
	rctx     routeCtx
	i        *Interceptor
	m        *method // the method's state when the stream was made
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	co       callOptions
	req      any

	startMu sync.Mutex
	started bool          // RecvMsg or Header has claimed the start (under startMu)
	ready   chan struct{} // closed once the stream is started: winner, release and err are set
	recvd   bool          // RecvMsg has been called (read only by the receiving goroutine)
	winner  *streamAttempt
	release func()
	err     error       // the race's failure, or the winner's end
	trailer metadata.MD // the trailer of the failure the race returned
	ended   bool

	// The caller's grpc.OnFinish callbacks run once, for the winner (gRPC runs them once per
	// RPC): each attempt's stream reports its end here, and the winner's is passed on.
	finMu     sync.Mutex
	finWinner *streamAttempt
	finDone   bool
}

// streamAttempt is one attempt's stream and what it received before the commit point.
type streamAttempt struct {
	grpc.ClientStream
	first proto.Message // the first message, until the caller has read it
	eof   bool          // the stream ended, OK, before any message

	finished bool  // gRPC has ended the attempt's stream (under hedgedStream.finMu)
	finErr   error // with this error
}

// attemptFinished is an attempt's grpc.OnFinish: the caller's callbacks run when it is the
// winner's, now or once the winner is known.
func (s *hedgedStream) attemptFinished(a *streamAttempt, err error) {
	s.finMu.Lock()
	a.finished, a.finErr = true, err
	run := s.finWinner == a && !s.finDone
	if run {
		s.finDone = true
	}
	s.finMu.Unlock()
	if run {
		s.co.finish(err)
	}
}

// decided tells the OnFinish relay the race's result: the winner, or nil and the call's
// error when there is none.
func (s *hedgedStream) decided(w *streamAttempt, err error) {
	if len(s.co.onFinish) == 0 {
		return
	}
	s.finMu.Lock()
	s.finWinner = w
	run := !s.finDone && (w == nil || w.finished)
	if run {
		s.finDone = true
		if w != nil {
			err = w.finErr
		}
	}
	s.finMu.Unlock()
	if run {
		s.co.finish(err)
	}
}

// claim reports whether the caller is the first of RecvMsg and Header, the one to start the
// stream; it must close s.ready once it has.
func (s *hedgedStream) claim() bool {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.started {
		return false
	}
	s.started = true
	return true
}

func (s *hedgedStream) SendMsg(m any) error {
	s.startMu.Lock()
	started := s.started
	s.startMu.Unlock()
	if started {
		return errors.New("hedgegrpc: SendMsg on a server-streaming call after its request")
	}
	if pm, ok := m.(proto.Message); ok {
		// Attempts send it later, some after the caller may have reused its own.
		m = proto.Clone(pm)
	}
	s.req = m
	return nil
}

func (s *hedgedStream) CloseSend() error { return nil } // each attempt closes its own

func (s *hedgedStream) Context() context.Context {
	if s.winner != nil {
		return s.winner.Context()
	}
	return s.ctx
}

func (s *hedgedStream) Header() (metadata.MD, error) {
	if s.claim() {
		func() {
			defer close(s.ready) // a panic too leaves no receiver waiting for good
			s.startOnce()
		}()
	}
	<-s.ready // a race RecvMsg runs: its winner's headers, as a plain stream waits for its own
	if s.winner == nil {
		return nil, s.err
	}
	return s.winner.Header()
}

func (s *hedgedStream) Trailer() metadata.MD {
	if s.winner == nil {
		return s.trailer // the failing attempt's, as a plain stream gives its own
	}
	return s.winner.Trailer()
}

func (s *hedgedStream) RecvMsg(m any) error {
	if !s.recvd {
		s.recvd = true
		if s.claim() {
			func() {
				defer close(s.ready) // a panic (an Observer's, through the race) too leaves no Header waiting for good
				if pm, ok := m.(proto.Message); ok {
					s.race(pm)
				} else {
					s.startOnce()
				}
			}()
		} else {
			<-s.ready // Header started an unhedged stream, or is starting it
		}
	}
	if s.winner == nil || s.ended {
		return s.err
	}
	w := s.winner
	if w.first != nil {
		first := w.first
		w.first = nil
		pm := m.(proto.Message)
		proto.Reset(pm)
		proto.Merge(pm, first)
		return nil
	}
	var err error
	if w.eof {
		err = io.EOF
	} else {
		err = w.RecvMsg(m)
	}
	if err != nil {
		s.end(err)
	}
	return err
}

// end closes the call: the caller's header, trailer and peer are filled from the winner, and
// the winner's context is let go.
func (s *hedgedStream) end(err error) {
	s.ended, s.err = true, err
	if s.co.header != nil {
		*s.co.header, _ = s.winner.Header()
	}
	if s.co.trailer != nil {
		*s.co.trailer = s.winner.Trailer()
	}
	if s.co.peer != nil {
		if p, ok := peer.FromContext(s.winner.Context()); ok {
			*s.co.peer = *p
		}
	}
	s.release()
}

// race runs the attempts up to the first response message.
func (s *hedgedStream) race(typ proto.Message) {
	m := s.m
	if cur, ok := s.i.methods.Get(s.method); ok {
		m = cur // as Reconfigure left it
	}
	s.rctx.Context, s.rctx.route.policy, s.rctx.route.stream = s.ctx, m.policy, true
	ctx := context.Context(&s.rctx)
	if !m.repeatableFor(s.ctx) && hedge.RepeatabilityFrom(s.ctx) != hedge.NotRepeatable {
		ctx = hedge.WithRepeatable(ctx, false)
	}
	mt := typ.ProtoReflect().Type() // read here: attempts must not touch the caller's message
	attempt := func(ctx context.Context) (*streamAttempt, error) {
		info, _ := hedge.AttemptFrom(ctx)
		ctx = m.attemptContext(ctx, info.Index)
		var r attemptResult
		a := &streamAttempt{}
		opts := s.co.rest
		if len(s.co.onFinish) > 0 {
			opts = append(opts[:len(opts):len(opts)], grpc.OnFinish(func(err error) { s.attemptFinished(a, err) }))
		}
		mark := func(err error) error { return s.i.mark(err, &r, s.rctx.route.unsent(info.Index)) }
		cs, err := s.streamer(ctx, s.desc, s.cc, s.method, opts...)
		if err != nil {
			return nil, mark(err)
		}
		a.ClientStream = cs
		if err := cs.SendMsg(s.req); err != nil && err != io.EOF {
			return nil, mark(err)
		}
		if err := cs.CloseSend(); err != nil {
			return nil, mark(err)
		}
		first := mt.New().Interface()
		switch err := cs.RecvMsg(first); err {
		case nil:
			a.first = first
		case io.EOF:
			a.eof = true
		default:
			r.header, _ = cs.Header()
			r.trailer = cs.Trailer()
			if p, ok := peer.FromContext(cs.Context()); ok {
				r.peer = *p
			}
			return nil, mark(err)
		}
		return a, nil
	}
	w, hold, err := hedge.DoDetached(ctx, m.policy, attempt, nil)
	if err != nil {
		hold.Release()
		s.err = s.failure(err)
		s.decided(nil, s.err)
		return
	}
	s.winner, s.release = w, hold.Release
	s.decided(w, nil)
}

// failure is the error the caller sees for a race no attempt won; the caller's header, trailer
// and peer, and the stream's Trailer, come from the attempt whose failure it names.
func (s *hedgedStream) failure(err error) error {
	return streamFailure(s.ctx, &s.co, &s.trailer, err)
}

// streamFailure is a stream's error for a race no attempt won: the caller's own context error
// when that ended it; otherwise the failure the core names, whose attempt fills the caller's
// header, trailer and peer options (co) and the stream's Trailer (trailer).
func streamFailure(ctx context.Context, co *callOptions, trailer *metadata.MD, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return status.FromContextError(ctxErr).Err()
	}
	e := newError(err)
	if e.attempt != nil {
		co.fill(e.attempt.result)
		*trailer = e.attempt.result.trailer
	}
	return e
}

// startOnce opens one unhedged stream: the caller needs it before a race could start.
func (s *hedgedStream) startOnce() {
	opts := s.co.rest[:len(s.co.rest):len(s.co.rest)] // appending copies
	if s.co.header != nil {
		opts = append(opts, grpc.Header(s.co.header))
	}
	if s.co.trailer != nil {
		opts = append(opts, grpc.Trailer(s.co.trailer))
	}
	if s.co.peer != nil {
		opts = append(opts, grpc.Peer(s.co.peer))
	}
	for _, f := range s.co.onFinish {
		opts = append(opts, grpc.OnFinish(f))
	}
	cs, err := s.streamer(s.ctx, s.desc, s.cc, s.method, opts...)
	if err == nil {
		if err = cs.SendMsg(s.req); err == nil || err == io.EOF {
			err = cs.CloseSend()
		}
	}
	if err != nil {
		s.err = err
		return
	}
	s.winner, s.release = &streamAttempt{ClientStream: cs}, func() {}
	s.co = callOptions{rest: s.co.rest} // grpc fills them and runs OnFinish itself
}
