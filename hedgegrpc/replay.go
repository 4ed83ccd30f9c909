package hedgegrpc

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hedgekit/hedge"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// DefaultReplayBuffer is the default of Config.ReplayBuffer: 256 KiB of sent messages per
// call, the per-RPC retry buffer gRPC's own implementations (Java, C++) use for gRFC A6.
const DefaultReplayBuffer = 256 << 10

// replayStream is a client-streaming or bidi call hedged as gRFC A6 says: every message the
// caller sends is kept (up to the replay buffer) and sent on every attempt, a copy started
// later replaying them in order first; the call commits to the first attempt that receives a
// response message, or, when the buffer overflows first or the caller asks for the response
// headers, to the attempt that has answered (on its way to win) or else the earliest attempt
// still running, which then carries the rest of the call alone.
type replayStream struct {
	ctx      context.Context
	rctx     routeCtx
	i        *Interceptor
	m        *method
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	name     string
	streamer grpc.Streamer
	co       callOptions
	respType protoreflect.MessageType
	limit    int

	mu       sync.Mutex
	cond     *sync.Cond
	buf      []proto.Message // every message sent, in order, from the off'th on
	off      int             // messages dropped from buf's head: no attempt will send them again
	size     int
	closed   bool             // CloseSend was called
	early    bool             // the buffer overflowed, or the caller asked for headers: the call commits to commitTo
	running  []*replayAttempt // attempts that opened a stream, in order
	commitTo *replayAttempt
	answered *replayAttempt // the one attempt that reports a response to the core (attempt)
	commit   chan struct{}  // closed when the call commits early

	done    chan struct{} // the race is decided
	winner  *replayAttempt
	release func()
	err     error
	trailer metadata.MD
	ended   bool

	finOnce sync.Once // the caller's grpc.OnFinish callbacks run once for the call
}

// finish runs the caller's grpc.OnFinish callbacks, once.
func (s *replayStream) finish(err error) {
	if len(s.co.onFinish) > 0 {
		s.finOnce.Do(func() { s.co.finish(err) })
	}
}

// replayAttempt is one attempt's stream and its sender's progress through the buffer.
type replayAttempt struct {
	cs       grpc.ClientStream
	ctx      context.Context
	cancel   context.CancelFunc
	next     int   // the next buffered message its sender sends, counted from the first (under replayStream.mu)
	sendErr  error // why its sender stopped early
	exited   bool  // its sender has stopped (under replayStream.mu)
	sendDone chan struct{}
	first    proto.Message // the first response, until the caller reads it
	pending  chan error    // committed early: the first receive still runs
	eof      bool
	failed   bool // its first receive failed (under replayStream.mu): no commit picks it
}

// testHookRecvFailed, when set, runs as an attempt's first receive has failed, before the
// attempt checks whether the call committed to it meanwhile. Atomic: attempts of other calls
// may still be reading it when a test sets it.
var testHookRecvFailed atomic.Pointer[func(*replayStream)]

// replayStreamFor returns a hedged stream for a client-streaming or bidi call, or nil when the
// call cannot be hedged (not safe to repeat, or its response type is unknown).
func (i *Interceptor) replayStreamFor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, name string, streamer grpc.Streamer, opts []grpc.CallOption) *replayStream {
	m := i.method(name)
	if m == nil || !m.repeatableFor(ctx) { // nil: Config.MaxMethods methods have policies
		return nil
	}
	rt := i.responseType(name)
	if rt == nil {
		return nil
	}
	s := &replayStream{ctx: ctx, i: i, m: m, desc: desc, cc: cc, name: name, streamer: streamer, co: splitOptions(opts),
		respType: rt, limit: i.cfg.ReplayBuffer, commit: make(chan struct{}), done: make(chan struct{})}
	if s.limit == 0 {
		s.limit = DefaultReplayBuffer
	}
	s.cond = sync.NewCond(&s.mu)
	s.rctx.Context, s.rctx.route.policy, s.rctx.route.stream = ctx, m.policy, desc.ServerStreams
	go s.race()
	return s
}

// responseType finds a method's response message type through its descriptor.
func (i *Interceptor) responseType(name string) protoreflect.MessageType {
	full := protoreflect.FullName(strings.Replace(strings.TrimPrefix(name, "/"), "/", ".", 1))
	d, err := i.descriptors.FindDescriptorByName(full)
	if err != nil {
		return nil
	}
	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return nil
	}
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName()); err == nil {
		return mt
	}
	// A descriptor found through Config.Descriptors whose message no generated package
	// registered (a descriptor set loaded at run time, a proxy's dynamic messages): the
	// first response is decoded as a dynamic message of that descriptor, and deliver copies
	// it into whatever message the caller receives into.
	return dynamicpb.NewMessageType(md.Output())
}

func (s *replayStream) race() {
	defer func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() }() // a SendMsg waiting for a commit (below) sees the race over
	defer close(s.done)
	w, hold, err := hedge.DoDetached(context.Context(&s.rctx), s.m.policy, s.attempt, nil)
	if err != nil {
		hold.Release()
		s.err = s.failure(err)
		s.finish(s.err)
		return
	}
	s.winner, s.release = w, func() { w.cancel(); hold.Release() }
	if len(s.co.onFinish) > 0 {
		// A caller that gives up on the stream ends it too, as a plain stream's does.
		context.AfterFunc(w.ctx, func() { s.finish(status.FromContextError(w.ctx.Err()).Err()) })
	}
	s.mu.Lock()
	s.commitTo = w
	s.dropSentLocked(w) // no other attempt will send them
	s.cond.Broadcast()  // the winner's sender now follows the caller, unbounded
	s.mu.Unlock()
}

// dropSentLocked lets go of the messages a, the attempt the call is committed to, has sent:
// no other attempt will send them, and a long stream would otherwise keep every message it
// ever sent. s.mu is held.
func (s *replayStream) dropSentLocked(a *replayAttempt) {
	for s.off < a.next && len(s.buf) > 0 {
		s.buf[0] = nil
		s.buf = s.buf[1:]
		s.off++
	}
}

// failure is the error the caller sees for a race no attempt won (see streamFailure).
func (s *replayStream) failure(err error) error {
	return streamFailure(s.ctx, &s.co, &s.trailer, err)
}

// attempt opens a stream, replays the buffer on it (its sender goroutine), and waits for its
// first response message, or for the call to commit early (commitEarly).
func (s *replayStream) attempt(ctx context.Context) (*replayAttempt, error) {
	info, _ := hedge.AttemptFrom(ctx)
	s.mu.Lock()
	late := s.early && s.commitTo != nil
	s.mu.Unlock()
	if late {
		// Committed: a copy started now must not be sent. It loses to the committed attempt,
		// which always reports to the core (below), and waits to be cancelled.
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var r attemptResult
	mark := func(err error) error { return s.i.mark(err, &r, s.rctx.route.unsent(info.Index)) }
	actx, cancel := context.WithCancel(s.m.attemptContext(ctx, info.Index))
	cs, err := s.streamer(actx, s.desc, s.cc, s.name, s.co.rest...)
	if err != nil {
		cancel()
		return nil, mark(err)
	}
	a := &replayAttempt{cs: cs, ctx: actx, cancel: cancel, sendDone: make(chan struct{})}
	s.mu.Lock()
	s.running = append(s.running, a)
	if s.early && s.commitTo == nil {
		s.commitTo = a
		s.cond.Broadcast() // a SendMsg waiting for an attempt to carry the call
	}
	s.mu.Unlock()
	stop := context.AfterFunc(actx, func() { s.mu.Lock(); s.cond.Broadcast(); s.mu.Unlock() })
	go func() {
		defer close(a.sendDone)
		defer stop()
		s.send(a)
	}()
	recv := make(chan error, 1)
	first := s.respType.New().Interface()
	go func() { recv <- cs.RecvMsg(first) }()
	var rerr error
	select {
	case rerr = <-recv:
	case <-s.commit:
		s.mu.Lock()
		mine := s.commitTo == a
		if mine {
			s.answered = a
		}
		s.mu.Unlock()
		if mine {
			a.pending, a.first = recv, first
			return a, nil
		}
		rerr = <-recv
	}
	if rerr != nil && rerr != io.EOF {
		if hook := testHookRecvFailed.Load(); hook != nil {
			(*hook)(s)
		}
		// The call may have committed to this attempt as its stream failed (the select takes
		// either when both are ready, and a commit may come before the failure is marked
		// here). It carries the call all the same: the messages it sent are gone from the
		// buffer, and no retry could resend them. Its failure goes to the caller as any
		// committed stream's does, at once, not to retries that could only hand it back
		// after their backoffs, each spending the budget.
		s.mu.Lock()
		a.failed = true
		mine := s.commitTo == a
		if mine {
			s.answered = a
		}
		s.mu.Unlock()
		if mine {
			failed := make(chan error, 1)
			failed <- rerr
			a.pending, a.first = failed, first
			return a, nil
		}
	}
	if rerr == nil || rerr == io.EOF {
		// One attempt alone reports a response to the core, and it is the one an early
		// commit chose when there was one: else the core could pick as winner an attempt
		// whose messages another attempt's sender, committed to, had carried alone (and let
		// go of), and the winner would never send them. Another that answers too is a loser:
		// it waits to be cancelled.
		s.mu.Lock()
		won := s.answered == nil && (s.commitTo == nil || s.commitTo == a)
		if won {
			s.answered = a
		}
		s.mu.Unlock()
		if won {
			if rerr == io.EOF {
				a.eof = true
			} else {
				a.first = first
			}
			return a, nil
		}
		cancel()
		<-a.sendDone
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r.header, _ = cs.Header()
	r.trailer = cs.Trailer()
	cancel()
	<-a.sendDone
	return nil, mark(rerr)
}

// send is an attempt's sender: it sends the buffered messages in order, waiting for more,
// and closes its side once the caller has; it stops when its attempt ends.
func (s *replayStream) send(a *replayAttempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		a.exited = true
		s.cond.Broadcast() // a SendMsg waiting for this sender must not wait for ever
	}()
	for {
		for a.next == s.off+len(s.buf) && !s.closed && a.ctx.Err() == nil {
			s.cond.Wait()
		}
		if a.ctx.Err() != nil {
			return
		}
		if a.next < s.off {
			return // another attempt carried these alone: this one has lost
		}
		if a.next < s.off+len(s.buf) {
			m := s.buf[a.next-s.off]
			s.mu.Unlock()
			err := a.cs.SendMsg(m)
			s.mu.Lock()
			a.next++
			if s.commitTo == a {
				s.dropSentLocked(a) // no other attempt will replay it
			}
			s.cond.Broadcast()
			if err != nil {
				a.sendErr = err
				return
			}
			continue
		}
		s.mu.Unlock()
		a.cs.CloseSend()
		s.mu.Lock()
		return
	}
}

// SendMsg keeps m for every attempt. Until the call commits it returns at once; past the
// buffer it commits the call; after the commit it returns once the committed attempt has
// sent m, as a plain stream's SendMsg does.
func (s *replayStream) SendMsg(m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Error(codes.Unknown, "hedgegrpc: a hedged stream sends protobuf messages only")
	}
	pm = proto.Clone(pm) // attempts send it later, some after the caller has reused its own
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("hedgegrpc: SendMsg after CloseSend")
	}
	select {
	case <-s.done:
		if s.winner == nil || s.winner.ctx.Err() != nil {
			return io.EOF // the call is over: RecvMsg has its status, as on a plain stream
		}
	default:
	}
	if a := s.commitTo; a != nil && (a.sendErr != nil || a.exited) {
		// The committed attempt sends no more (its server ended the stream): m would be kept
		// for nobody, one message per call for as long as the caller went on sending.
		if a.sendErr != nil {
			return a.sendErr
		}
		return io.EOF // RecvMsg has the call's status
	}
	s.buf = append(s.buf, pm)
	k := s.off + len(s.buf)
	if s.commitTo == nil && !s.early {
		if s.size += proto.Size(pm); s.size > s.limit {
			s.commitEarlyLocked()
		}
	}
	s.cond.Broadcast()
	// Committed early with no attempt running (the one that failed waits out its retry's
	// backoff): the buffer is full, and m waits for the attempt that takes the commit, as
	// a plain stream's SendMsg waits for flow control, or for the race's end.
	for s.early && s.commitTo == nil && !isClosed(s.done) {
		s.cond.Wait()
	}
	a := s.commitTo
	if a == nil {
		if isClosed(s.done) {
			return io.EOF // the call is over: RecvMsg has its status
		}
		return nil
	}
	for a.next < k && a.sendErr == nil && a.ctx.Err() == nil && !a.exited {
		s.cond.Wait()
	}
	switch {
	case a.sendErr != nil:
		return a.sendErr
	case a.next < k:
		return io.EOF // the attempt is over before it sent m: RecvMsg has the call's status
	}
	return nil
}

// isClosed reports whether c is closed.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// commitEarlyLocked commits the call, before any attempt has received a response, to the
// earliest attempt still running (or, with none running, to the next to open its stream),
// unless it is committed already. Copies not yet sent are then never sent. s.mu is held.
func (s *replayStream) commitEarlyLocked() {
	if s.commitTo != nil || s.early {
		return
	}
	s.early = true
	s.commitTo = s.answered // one that reported a response to the core is the one it will pick
	if s.commitTo == nil {
		s.commitTo = s.earliestRunning()
	}
	close(s.commit)
}

// earliestRunning is the first attempt whose stream is still live.
func (s *replayStream) earliestRunning() *replayAttempt {
	for _, a := range s.running {
		if a.ctx.Err() == nil && !a.failed {
			return a
		}
	}
	return nil // none live: the next attempt to open a stream takes the commit
}

func (s *replayStream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

func (s *replayStream) wait() bool {
	<-s.done
	return s.winner != nil
}

func (s *replayStream) Context() context.Context {
	select {
	case <-s.done:
		if s.winner != nil {
			return s.winner.cs.Context()
		}
	default:
	}
	return s.ctx
}

// Header commits a call not yet decided, as gRPC's own retries commit once response headers
// arrive: the headers the caller reads are then the stream's it goes on with. A server may
// send its headers and wait for the client's messages, which a caller sends only once it has
// read them; a Header that waited for a response message would wait for ever.
func (s *replayStream) Header() (metadata.MD, error) {
	s.mu.Lock()
	s.commitEarlyLocked()
	s.mu.Unlock()
	if !s.wait() {
		return nil, s.err
	}
	return s.winner.cs.Header()
}

func (s *replayStream) Trailer() metadata.MD {
	select {
	case <-s.done:
	default:
		return nil
	}
	if s.winner == nil {
		return s.trailer
	}
	return s.winner.cs.Trailer()
}

func (s *replayStream) RecvMsg(m any) error {
	if !s.wait() {
		return s.err
	}
	if s.ended {
		return s.err
	}
	w := s.winner
	var err error
	switch {
	case w.pending != nil:
		err = <-w.pending
		w.pending = nil
		if err == nil {
			err = w.deliver(m)
		}
	case w.first != nil:
		err = w.deliver(m)
	case w.eof:
		err = io.EOF
	default:
		err = w.cs.RecvMsg(m)
	}
	if err != nil {
		s.ended, s.err = true, err
		s.end()
		return err
	}
	if !s.desc.ServerStreams {
		// A client-streaming call has one response: gRPC has already read the stream's end
		// behind it, so the call is over.
		s.ended, s.err = true, io.EOF
		s.end()
	}
	return nil
}

// deliver hands the first response to the caller's message.
func (a *replayAttempt) deliver(m any) error {
	pm, ok := m.(proto.Message)
	if !ok {
		return status.Error(codes.Internal, "hedgegrpc: a hedged stream receives protobuf messages only")
	}
	first := a.first
	a.first = nil
	proto.Reset(pm)
	if pm.ProtoReflect().Descriptor() == first.ProtoReflect().Descriptor() {
		proto.Merge(pm, first)
		return nil
	}
	// The caller's message is of another descriptor of the same name (a generated type
	// against a dynamic message, or descriptors built twice): Merge would panic, the wire
	// form carries over.
	b, err := proto.Marshal(first)
	if err == nil {
		err = proto.Unmarshal(b, pm)
	}
	if err != nil {
		return status.Errorf(codes.Internal, "hedgegrpc: copying the first response into %T: %v", m, err)
	}
	return nil
}

// end fills the caller's header, trailer and peer from the winner and lets its context go.
func (s *replayStream) end() {
	w := s.winner
	if s.co.header != nil {
		*s.co.header, _ = w.cs.Header()
	}
	if s.co.trailer != nil {
		*s.co.trailer = w.cs.Trailer()
	}
	if s.co.peer != nil {
		if p, ok := peer.FromContext(w.cs.Context()); ok {
			*s.co.peer = *p
		}
	}
	if s.err == io.EOF {
		s.finish(nil)
	} else {
		s.finish(s.err)
	}
	s.release()
}
