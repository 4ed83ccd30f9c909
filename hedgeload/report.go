package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	simreport "github.com/hedgekit/hedge/sim/report"
)

// writeJSON writes report.json: {"model", "calibration", "points": [{setup, load_pct,
// cancellation, protocol, seed, real, sim, agreement, generator}]}; real and sim have
// hedgesim's point field names.
func writeJSON(w io.Writer, rep Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// pctOrDash formats a percentage difference.
func pctOrDash(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%+.1f %%", *p)
}

// ptrMs formats an optional latency: nil is a percentile on failed calls.
func ptrMs(p *float64) string {
	if p == nil {
		return "failed"
	}
	return fmtMs(*p)
}

// cell is "real / simulated median", with the simulated seeds' range when there are several.
func cell(c Check, seeds int) string {
	s := ptrMs(c.Real) + " / " + ptrMs(c.Sim.Median)
	if seeds > 1 {
		s += " (" + ptrMs(c.Sim.Min) + "–" + ptrMs(c.Sim.Max) + ")"
	}
	return s
}

// writeMarkdown writes report.md: the model, the calibration, and one table per protocol and
// cancellation mode with the real and simulated figures side by side.
func writeMarkdown(w io.Writer, rep Report) error {
	var b bytes.Buffer
	m := rep.Model
	fmt.Fprintf(&b, "# hedgeload: real servers against the simulator\n\n")
	servers := "1 server"
	if m.Replicas > 1 {
		servers = fmt.Sprintf("%d servers behind a %s balancer", m.Replicas, m.Balancer)
		if m.Balancer == "" {
			servers = fmt.Sprintf("%d servers behind hedgegrpc's balancer (p2c)", m.Replicas)
		}
	}
	if m.Clients > 1 {
		servers += fmt.Sprintf(", called by %d clients (each with policies of its own, each call made by one at random)", m.Clients)
	}
	delay := "" // said only when a setup of the run hedges after it
	var setups []string
	for _, p := range rep.Points {
		setups = append(setups, p.Setup)
	}
	if usesHedgeDelay(setups) {
		delay = fmt.Sprintf("hedge delay %.0f ms; ", m.HedgeDelayMs)
	}
	fmt.Fprintf(&b, "Model: %d workers × %s; service time %s (mean %.2f ms); %s"+
		"%d calls per point (first %.0f %% not measured); seeds %v; time scale %g (figures in the model's ms).\n\n",
		m.Workers, servers, m.ServiceTime, m.MeanServiceMs, delay, m.Calls, 100*m.WarmupFraction, m.Seeds, m.TimeScale)
	if rep.Stopped != "" {
		fmt.Fprintf(&b, "**The run stopped before every point ran:** %s\n\n", rep.Stopped)
	}
	agree := 0
	for _, p := range rep.Points {
		if p.Agreement.OK {
			agree++
		}
	}
	fmt.Fprintf(&b, "**%d of %d points agree** (p99 and p99.9 within ±%g %% of the simulator's, or within the simulated seeds' range widened by as much; "+
		"the p50 within ±%g %% of the seeds' median; the workers' utilisation within ±%g %% of the twin whose run drew the servers' own service times, the first seed's, or over n < %d measured calls within ±%g/√n %%, what the twin's own arrivals make it vary by). "+
		"The simulated twin is late by the client delay each point measured on its own calls (the generator's lag before each send, the rest on each answer), and nothing is subtracted from the real figures. "+
		"Simulated figures: the median over the seeds, their range in brackets. Wall time %.0f s.\n\n",
		agree, len(rep.Points), m.BandPct, min(m.BandPct, tightPct), tightPct, arrivalTolCalls, float64(arrivalSpreadPct), rep.WallSeconds)
	if m.ServerScale != 0 && m.ServerScale != 1 {
		fmt.Fprintf(&b, "**Diagnostic run:** the real servers drew every service time %g times the model's (-server-scale), and the simulator was not told: the points should disagree.\n\n", m.ServerScale)
	}

	b.WriteString("## Calibration (wire time, µs)\n\n")
	b.WriteString("| protocol | round trip p50 | round trip p99 | sleep slack p50 | sleep slack p99 | round trip less service |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range rep.Calibration {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f |\n", c.Protocol, c.RoundTripP50Us, c.RoundTripP99Us, c.SleepP50Us, c.SleepP99Us, c.OverheadUs)
	}
	b.WriteString("\nRound trip: a call to a server whose every service time is the model's median, from its due time (generator, client, loopback, queue, the worker waking from its sleep). " +
		"Sleep slack: how much longer than asked a worker sleeps; every server sleep is shortened by its p50, so a worker holds its slot for the drawn service time. Round trip less service: the p50 less that service time, what a call costs on an otherwise idle machine (for information: each point measures its own).\n")

	for _, proto := range m.Protocols {
		for _, mode := range m.Cancellations {
			fmt.Fprintf(&b, "\n## %s, cancellation %s\n\n", proto, mode)
			b.WriteString("| setup | load | p50 real / sim | p99 real / sim | p99.9 real / sim | p99 diff | req/call real / sim | hedge rate real / sim | win rate real / sim | failed % | util % real / sim | agrees |\n")
			b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
			for _, p := range rep.Points {
				if p.Protocol != proto || p.Cancellation != mode {
					continue
				}
				r, s := p.Real, p.Sim
				ok := "yes"
				var by []string
				for _, c := range p.Agreement.Checks {
					if c.By != "" && c.By != "band" && !slices.Contains(by, c.By) {
						by = append(by, c.By)
					}
				}
				if len(by) > 0 {
					ok += " (" + strings.Join(by, ", ") + ")"
				}
				if !p.Agreement.OK {
					ok = "**no**: " + p.Agreement.Why
				}
				if r.Collapse || len(p.Agreement.Checks) < 3 {
					fmt.Fprintf(&b, "| %s | %g%% | collapse: real %v, sim %v | | | | | | | | | %s |\n", p.Setup, p.LoadPct, r.Collapse, s.Collapse, ok)
					continue
				}
				ch := p.Agreement.Checks
				fmt.Fprintf(&b, "| %s | %g%% | %s | %s | %s | %s | %.3f / %.3f | %.3f / %.3f | %.2f / %.2f | %.2f | %.1f / %.1f | %s |\n",
					p.Setup, p.LoadPct, cell(ch[0], len(p.SimSeeds)), cell(ch[1], len(p.SimSeeds)), cell(ch[2], len(p.SimSeeds)), pctOrDash(ch[1].DiffPct),
					r.RequestsPerCall, s.RequestsPerCall, r.HedgeRate, s.HedgeRate, r.HedgeWinRate, s.HedgeWinRate,
					r.FailedPct, r.UtilisationPct, s.UtilisationPct, ok)
			}
		}
	}
	b.WriteString("\n`failed %` is every failed call (rejected ones included) of the real run; percentiles count failed calls as slower than any success.\n")
	writeGeneratorTable(&b, rep)
	_, err := w.Write(b.Bytes())
	return err
}

// writeGeneratorTable writes report.md's generator section: how late each point's calls were
// sent, how many were in flight, the load offered and the client delay its calls measured.
func writeGeneratorTable(b *bytes.Buffer, rep Report) {
	b.WriteString("\n## Generator\n\n")
	b.WriteString("Offered: the measured calls' scheduled arrival rate, in % of the model's. Client delay: each measured call's latency less its queue wait and its drawn service time (the generator's lag, the way to the server and back, the worker's timer slack), over the calls their first attempt answered, wire µs; the twin carries these. To server / back: the p50 of the way from the client's send to the server's receipt, and from the worker's end to the client's.\n\n")
	b.WriteString("| setup | load | cancellation | protocol | seed | lag p50 µs | lag p99 µs | lag max µs | most in flight | offered % | to server / back p50 µs | client delay p50 / mean µs | seconds |\n")
	b.WriteString("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, p := range rep.Points {
		g, sp := p.Generator, p.Generator.Split
		fmt.Fprintf(b, "| %s | %g%% | %s | %s | %d | %.0f | %.0f | %.0f | %d | %.2f | %.0f / %.0f | %.0f / %.0f | %.1f |\n",
			p.Setup, p.LoadPct, p.Cancellation, p.Protocol, p.Seed, g.LagP50Us, g.LagP99Us, g.LagMaxUs, g.MaxInFlight, g.OfferedPct,
			sp.ToServerP50Us, sp.FromServerP50Us, sp.DelayP50Us, sp.DelayMeanUs, g.DurationSecs)
	}
}

// writeHTML writes report.html: the Markdown report's tables as an HTML page.
func writeHTML(w io.Writer, rep Report) error {
	var md bytes.Buffer
	if err := writeMarkdown(&md, rep); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>hedgeload report</title>\n" +
		"<style>body{font-family:sans-serif;max-width:90em;margin:2em auto}table{border-collapse:collapse;margin:1em 0}" +
		"td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}td:first-child,th:first-child{text-align:left}</style>\n</head><body>\n")
	inTable := false
	for _, line := range strings.Split(md.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
				continue
			}
			tag := "td"
			if !inTable {
				b.WriteString("<table>\n")
				inTable, tag = true, "th"
			}
			b.WriteString("<tr>")
			for _, c := range cells {
				fmt.Fprintf(&b, "<%s>%s</%s>", tag, inline(c), tag)
			}
			b.WriteString("</tr>\n")
			continue
		case inTable:
			b.WriteString("</table>\n")
			inTable = false
		}
		switch {
		case strings.HasPrefix(line, "## "):
			fmt.Fprintf(&b, "<h2>%s</h2>\n", html.EscapeString(line[3:]))
		case strings.HasPrefix(line, "# "):
			fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(line[2:]))
		case strings.TrimSpace(line) != "":
			fmt.Fprintf(&b, "<p>%s</p>\n", inline(line))
		}
	}
	if inTable {
		b.WriteString("</table>\n")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// inline escapes s and renders its **bold** spans.
func inline(s string) string {
	s = html.EscapeString(strings.TrimSpace(s))
	for {
		i := strings.Index(s, "**")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i+2:], "**")
		if j < 0 {
			return s
		}
		s = s[:i] + "<b>" + s[i+2:i+2+j] + "</b>" + s[i+2+j+2:]
	}
}

// writeReport writes report.json, report.md and report.html into dir as one set: all three
// are rendered first, and a failure leaves an earlier run's files as they were
// (report.WriteFiles).
func writeReport(dir string, rep Report) error {
	files := map[string][]byte{}
	for _, f := range []struct {
		name  string
		write func(io.Writer, Report) error
	}{{"report.json", writeJSON}, {"report.md", writeMarkdown}, {"report.html", writeHTML}} {
		var b bytes.Buffer
		if err := f.write(&b, rep); err != nil {
			return fmt.Errorf("%s: %v", f.name, err)
		}
		files[f.name] = b.Bytes()
	}
	return simreport.WriteFiles(dir, files)
}
