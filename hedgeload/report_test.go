package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hedgekit/hedge/sim"
)

func sampleReport() Report {
	real := sim.Point{Setup: "recommended", LoadPct: 50, Cancellation: sim.Reaches, Seed: 1,
		P50Ms: 10.4, P99Ms: 27.1, P999Ms: 34, RequestsPerCall: 1.06, HedgeRate: 0.06, HedgeWinRate: 0.35, UtilisationPct: 52}
	simulated := real
	simulated.P50Ms, simulated.P99Ms, simulated.P999Ms = 10.1, 26.0, 33.5
	return Report{
		Model: Model{Model: sim.Model{Workers: 16, Replicas: 1, ServiceTime: "mixture", Calls: 22300, WarmupFraction: 0.1,
			Seeds: []uint64{1}, LoadsPct: []float64{50}, Setups: []string{"recommended"},
			Cancellations: []string{sim.Reaches}}, Protocols: []string{HTTP2}, TimeScale: 1, BandPct: 15},
		Calibration: []Calibration{{Protocol: HTTP2, RoundTripP50Us: 120, RoundTripP99Us: 400, SleepP50Us: 250, SleepP99Us: 900, OverheadUs: 370}},
		Points: []Result{{Setup: "recommended", LoadPct: 50, Cancellation: sim.Reaches, Protocol: HTTP2, Seed: 1,
			Real: real, Sim: simulated, SimSeeds: []uint64{1}, Agreement: compare(real, []sim.Point{simulated}, 0, 15)}},
	}
}

// report.json: each point has setup, load_pct, cancellation, protocol, and real and sim
// objects with exactly hedgesim's point field names.
func TestReportJSON(t *testing.T) {
	var b bytes.Buffer
	if err := writeJSON(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Model       map[string]any   `json:"model"`
		Calibration []map[string]any `json:"calibration"`
		Points      []map[string]any `json:"points"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Points) != 1 || doc.Model["time_scale"] != 1.0 || doc.Calibration[0]["overhead_us"] != 370.0 {
		t.Fatalf("report.json = %s", b.String())
	}
	// The model is hedgesim's, keys flat, with hedgeload's own beside them: one vocabulary.
	sm, err := json.Marshal(sim.Model{ClientInFlight: 1, HeavyClientShare: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	var smKeys map[string]any
	json.Unmarshal(sm, &smKeys)
	rm := sampleReport().Model
	rm.ClientInFlight, rm.HeavyClientShare = 1, 0.5
	lm, err := json.Marshal(rm)
	if err != nil {
		t.Fatal(err)
	}
	var lmKeys map[string]any
	json.Unmarshal(lm, &lmKeys)
	for k := range smKeys {
		if _, ok := lmKeys[k]; !ok {
			t.Errorf("hedgeload's model has no %q, hedgesim's key", k)
		}
	}
	for _, k := range []string{"protocols", "time_scale", "server_scale", "band_pct", "max_lag_ms"} {
		if _, ok := lmKeys[k]; !ok {
			t.Errorf("hedgeload's model has no %q", k)
		}
	}
	if len(lmKeys) != len(smKeys)+5 || doc.Model["workers"] != 16.0 || doc.Model["Model"] != nil {
		t.Errorf("model keys = %v, want hedgesim's %v and five more, flat", slices.Sorted(maps.Keys(lmKeys)), slices.Sorted(maps.Keys(smKeys)))
	}
	p := doc.Points[0]
	for k, want := range map[string]any{"setup": "recommended", "load_pct": 50.0, "cancellation": "reaches", "protocol": "http/2"} {
		if p[k] != want {
			t.Errorf("point[%q] = %v, want %v", k, p[k], want)
		}
	}
	// hedgesim's field names, from its own Point.
	hs, err := json.Marshal(sim.Point{})
	if err != nil {
		t.Fatal(err)
	}
	var hsKeys map[string]any
	json.Unmarshal(hs, &hsKeys)
	want := slices.Sorted(maps.Keys(hsKeys))
	for _, side := range []string{"real", "sim"} {
		obj, ok := p[side].(map[string]any)
		if !ok {
			t.Fatalf("point has no %q object", side)
		}
		if got := slices.Sorted(maps.Keys(obj)); !slices.Equal(got, want) {
			t.Errorf("%s fields = %v, want hedgesim's %v", side, got, want)
		}
	}
	if p["real"].(map[string]any)["p99_ms"] != 27.1 || p["sim"].(map[string]any)["p99_ms"] != 26.0 {
		t.Errorf("p99: real %v, sim %v", p["real"], p["sim"])
	}
	if a := p["agreement"].(map[string]any); a["ok"] != true || len(a["checks"].([]any)) != 4 {
		t.Errorf("agreement = %v", a)
	}

	// A percentile that lands on failed calls is null, as in hedgesim's report.json.
	rep := sampleReport()
	rep.Points[0].Real.P999Ms, rep.Points[0].Real.FailedPct = sim.Failed, 0.5
	rep.Points[0].Agreement = compare(rep.Points[0].Real, []sim.Point{rep.Points[0].Sim}, 0, 15)
	b.Reset()
	if err := writeJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var failed struct {
		Points []struct {
			Real      map[string]any `json:"real"`
			Agreement Agreement      `json:"agreement"`
		} `json:"points"`
	}
	if err := json.Unmarshal(b.Bytes(), &failed); err != nil {
		t.Fatal(err)
	}
	if r := failed.Points[0].Real; r["p999_ms"] != nil || r["failed_pct"] != 0.5 || failed.Points[0].Agreement.OK {
		t.Errorf("a failed p99.9: real = %v, agreement %+v", r, failed.Points[0].Agreement)
	}
}

// report.md holds the calibration and a row per point with real and simulated side by side;
// report.html the same tables.
func TestReportMarkdownAndHTML(t *testing.T) {
	rep := sampleReport()
	var md, h bytes.Buffer
	if err := writeMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"**1 of 1 points agree**",
		"| http/2 | 120 | 400 | 250 | 900 | 370 |",
		"## http/2, cancellation reaches",
		"| recommended | 50% | 10.4 / 10.1 | 27.1 / 26.0 | 34.0 / 33.5 | +4.2 % | 1.060 / 1.060 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md.String())
		}
	}
	// The model's hedge delay is said only when a setup of the run hedges after it.
	if strings.Contains(md.String(), "hedge delay") {
		t.Errorf("report.md names a hedge delay no setup of the run (recommended) uses:\n%s", md.String())
	}
	fixed := sampleReport()
	fixed.Model.HedgeDelayMs = 20
	fixed.Points[0].Setup = sim.SetupNoBudget
	var fmd bytes.Buffer
	if err := writeMarkdown(&fmd, fixed); err != nil || !strings.Contains(fmd.String(), "hedge delay 20 ms;") {
		t.Errorf("report.md of a fixed-delay setup lacks its hedge delay (%v):\n%s", err, fmd.String())
	}
	if err := writeHTML(&h, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>recommended</td><td>50%</td><td>10.4 / 10.1</td>", "<b>1 of 1 points agree</b>", "</table>\n</body></html>"} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}

	// A disagreeing point says why, and a stopped run says that it stopped.
	rep.Points[0].Real.P99Ms = 60
	rep.Points[0].Agreement = compare(rep.Points[0].Real, []sim.Point{rep.Points[0].Sim}, 0, 15)
	rep.Stopped = "no hedge, 70% load: the load generator fell behind"
	md.Reset()
	writeMarkdown(&md, rep)
	for _, want := range []string{"**no**: p99_ms real 60.0, simulated 26.0", "**0 of 1 points agree**", "**The run stopped before every point ran:** no hedge, 70% load"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if rep.Agrees() {
		t.Error("Agrees() = true for a stopped run with a disagreeing point")
	}
}
