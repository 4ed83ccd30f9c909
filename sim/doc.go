// Package sim is the hedging simulator: a discrete-event model of one service — Workers
// workers behind one FIFO queue shared by every attempt of every call — driven by the
// library's own policy and per-call state machine on a virtual clock. It answers one question:
// what does hedging do to the tail when a hedge waits behind other callers' first attempts?
// The model is specified in SIMULATION.md; cmd/hedgesim turns a [Sweep] into a report.
//
// # Beyond the reference model
//
// [Params] extends the model without changing it: several independent clients (Clients), several
// replicas with their own queues behind a balancer (Replicas, Balancer; the choice of replica and
// each replica's health are the core replica package's), cancellations that take time to reach
// the server (TieDelay), bursty or stepped arrivals, slowdowns, stop-the-world pauses, replica
// failures and callers' deadlines. [Families] names the scenario families built from them, and
// [Scorecard] judges a setup against "no hedge" on every family with [Judge]'s hold rule.
// [Timelines] follows one run of each setup second by second (hedges sent and won, refusals,
// slow calls), to find the episode that makes a p99.
//
// # One brain
//
// The simulator makes no hedging decision. Each point builds one *hedge.Policy from its
// [Setup] and shares it by every call; each call is a *hedge.Call (pooled and Reset) that the
// engine feeds events — start, attempt started service, attempt done, timer fired — and whose
// actions it carries out: start attempt k (join the queue), cancel attempt k, arm the timer,
// finish. [ScriptCall] runs the same driver on one scripted call, so a test can check that the
// simulator and hedge.Do decide the same.
//
// # Determinism
//
// Virtual time is int64 nanoseconds (the core sees a fixed epoch plus that offset). Random
// numbers come from separate PCG streams seeded from the seed: one for arrivals, one per
// request for its service time (keyed by call and attempt index, so every setup sees the same
// service time for the same request), and one per call for the core's jitter. Equal event
// times are broken by push order. The same arguments give the same [Point]; a [Sweep] returns
// points in a fixed order whatever the parallelism, so its JSON is byte-identical.
//
// # Measurement
//
// Arrivals are open-loop Poisson at λ = load · Workers · capacity / E[service time], where
// capacity is the number of replicas (1 in the reference model), less what slow and pausing
// replicas cannot serve (see Params). The first
// WarmupFraction of calls by arrival are not measured; arrivals go on after the last call
// until every measured call has finished, so the measured calls see a steady queue to the end.
// [Run] documents what each figure of a Point means, in particular when an attempt counts as
// having reached the server in each cancellation mode.
//
// # Collapse
//
// A point collapses when the queue never drains: hedges multiply the load past what the
// workers serve. The run stops at once when the queue exceeds Params.MaxQueue (2000 per worker)
// and, at the end of the arrivals, reports a collapse when no worker was idle during the second
// half of the arrivals while the queue grew (or the queue is long and still growing). It also
// stops, as a collapse, once the arrivals pass twice Params.Calls by more than the larger of
// 1,000 and 60 per worker (the measured calls are not getting through), or at
// Params.MaxEvents. A collapsed point has zero percentiles; its other figures describe the
// calls up to the stop.
package sim
