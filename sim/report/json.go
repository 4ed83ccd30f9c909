package report

import (
	"encoding/json"
	"io"
	"math"
	"reflect"

	"github.com/hedgekit/hedge/sim"
)

// WriteJSON writes r as indented JSON: report.json, the file scripts read. The field names are
// the stable ones of [sim.Report]. Output is deterministic: points keep their order, the
// suppressed-reason maps are written with sorted keys (encoding/json sorts map keys), floats are
// rounded to 4 decimals, and empty lists and maps are written as [] and {} rather than null so
// a script never has to special-case them. A latency percentile that lands on failed calls,
// and the mean of calls some of which failed ([sim.Failed]), are written as null. JSON has no
// NaN or infinity: any other such value (for example the hedge win rate of a setup that never
// hedged) is written as 0.
func WriteJSON(w io.Writer, r sim.Report) error {
	b, err := json.MarshalIndent(normalize(r), "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// normalize returns a copy of r ready for encoding; r itself is not modified. It walks the
// fields by reflection rather than by name so that a figure added to sim.Point later is rounded
// and made non-null too.
func normalize(r sim.Report) sim.Report {
	out := sim.Report{Model: r.Model, Points: make([]sim.Point, len(r.Points))}
	normalizeStruct(reflect.ValueOf(&out.Model).Elem())
	for i, p := range r.Points {
		out.Points[i] = p
		normalizeStruct(reflect.ValueOf(&out.Points[i]).Elem())
		// A failed percentile or mean stays failed (sim.Failed, written as null), not 0.
		for _, f := range []struct{ in, out *float64 }{
			{&p.P50Ms, &out.Points[i].P50Ms}, {&p.P99Ms, &out.Points[i].P99Ms}, {&p.P999Ms, &out.Points[i].P999Ms}, {&p.MeanMs, &out.Points[i].MeanMs},
		} {
			if sim.IsFailed(*f.in) {
				*f.out = sim.Failed
			}
		}
	}
	return out
}

// normalizeStruct rounds the float fields of the addressable struct v and replaces its slices
// and maps by copies (so the caller's are not touched), nil ones by empty ones.
func normalizeStruct(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		switch f.Kind() {
		case reflect.Float32, reflect.Float64:
			f.SetFloat(round(f.Float()))
		case reflect.Slice:
			c := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
			reflect.Copy(c, f)
			if k := c.Type().Elem().Kind(); k == reflect.Float32 || k == reflect.Float64 {
				for j := range c.Len() {
					c.Index(j).SetFloat(round(c.Index(j).Float()))
				}
			}
			f.Set(c)
		case reflect.Map:
			c := reflect.MakeMapWithSize(f.Type(), f.Len())
			for it := f.MapRange(); it.Next(); {
				c.SetMapIndex(it.Key(), it.Value())
			}
			f.Set(c)
		}
	}
}

// round rounds x to the 4 decimals report.json keeps; NaN and infinities become 0 (see
// WriteJSON). Latencies in milliseconds and percentages need far fewer; rates kept as fractions
// (hedge_rate) keep a resolution of 0.01 %. Rounding makes the file readable and stops the last
// bits of a float sum from showing up in diffs.
func round(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	const scale = 1e4 // 4 decimals
	if math.Abs(x) >= 1e15 {
		return x // has no fractional digits left to round, and x*scale could overflow
	}
	r := math.Round(x*scale) / scale
	if r == 0 {
		return 0 // no "-0"
	}
	return r
}
