package main

import (
	"testing"
	"time"

	"github.com/hedgekit/hedge/sim"
)

// A call's client delay is its latency less its first attempt's queue wait and the service
// time the server meant to hold it for; its lag is sent less due. Calls a hedge answered, and
// failed ones, are left out.
func TestClientDelays(t *testing.T) {
	svc := constant{10 * time.Millisecond}
	pc := pointConfig{service: svc, calls: 4, serverScale: 1.5}
	acct := newAccounts(4, 0, 4, 1)
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	recs := make([]callRecord, 4)
	// Call 0: due at 0, sent at 0.4 ms, at the server at 0.6, waits 1 ms, held 15.2 ms, ends
	// 0.3 ms later: 17.5 ms in all, of which 1 ms of queue and 15 ms of (scaled) service.
	at := func(i int, due, sent, arrived, started, held, end float64, winner int8, failed bool) {
		recs[i] = callRecord{due: ms(due), sent: ms(sent), end: ms(end), lat: ms(end - due), winner: winner, failed: failed, ended: true}
		acct.arrivedAt[i*maxAttempts].Store(int64(ms(arrived)))
		acct.startedAt[i*maxAttempts].Store(int64(ms(started)))
		acct.served[i*maxAttempts].Store(int64(ms(held)))
	}
	at(0, 0, 0.4, 0.6, 1.6, 15.2, 17.1, 0, false)
	at(1, 10, 10.1, 10.2, 10.2, 14.5, 24.75, 0, false) // woke early: less than nothing is nothing
	at(2, 20, 20.5, 20.6, 20.6, 15, 60, 1, false)      // a hedge answered
	at(3, 30, 30.5, 30.6, 30.6, 15, 60, 0, true)       // failed
	lags, rest, _, s := clientDelays(pc, recs, 0, acct)
	if len(lags) != 2 || len(rest) != 2 || s.Calls != 2 {
		t.Fatalf("%d lags, %d rests, %d calls: want the two calls their first attempt answered", len(lags), len(rest), s.Calls)
	}
	near := func(a, b time.Duration) bool { return (a - b).Abs() < time.Microsecond }
	if !near(lags[0], ms(0.4)) || !near(rest[0], ms(0.7)) || !near(lags[1], ms(0.1)) || rest[1] != 0 {
		t.Errorf("lags %v, rest %v: want 0.4 ms and 0.7 ms (17.1 − 1 − 15 − 0.4), then 0.1 ms and 0", lags, rest)
	}
	if s.QueueMeanUs < 499 || s.QueueMeanUs > 501 || s.ToServerMeanUs < 149 || s.ToServerMeanUs > 151 || s.DelayMeanUs < 549 || s.DelayMeanUs > 551 {
		t.Errorf("split %+v: want a queue of 0.5 ms, 0.15 ms to the server and a delay of 0.55 ms on average", s)
	}
}

// The twin that carries a point's measured delays is late by them: its calls' latency grows
// by the lags and the rest, as the real calls' does, and the servers see nothing of it.
func TestMeasuredDelayTwin(t *testing.T) {
	p := sim.Params{Calls: 5000, Workers: 16, Service: sim.ReferenceMixture()}
	st, err := setups([]string{sim.SetupNoHedge}, 20*time.Millisecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	base, err := sim.Run(p, st[0], 30, sim.Ignored, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.ClientDelay = measuredDelay([]time.Duration{300 * time.Microsecond}, []time.Duration{500 * time.Microsecond})
	twin, err := sim.Run(p, st[0], 30, sim.Ignored, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d := twin.P50Ms - base.P50Ms; d < 0.75 || d > 0.85 {
		t.Errorf("p50 %.3f ms with 0.3 ms lag and 0.5 ms of rest, %.3f ms without: want 0.8 ms more", twin.P50Ms, base.P50Ms)
	}
	if d := twin.UtilisationPct - base.UtilisationPct; d < -0.01 || d > 0.01 {
		t.Errorf("utilisation %.2f %% with the delay, %.2f %% without: the servers must not notice", twin.UtilisationPct, base.UtilisationPct)
	}
}
