package hedgeconfig_test

import (
	"errors"
	"testing"

	"github.com/hedgekit/hedge/hedgeconfig"
)

// The parser tags only true and false (True, TRUE, False, FALSE) as booleans, but a tag
// written out, !!bool yes, makes a boolean of any text. Read with strconv.ParseBool, whose
// error was dropped, such a value meant false for a boolean field and for idempotent
// (!!bool yes: the YAML 1.1 word for true, sent a GET once) and, for a block, anything but
// the word false turned it on (!!bool no switched the breaker on). A boolean the decoder
// cannot read must be an error that names its key, as "yes" without the tag already is.
func TestExplicitBoolTagTakesOnlyTrueOrFalse(t *testing.T) {
	for _, tc := range []struct{ src, field string }{
		{"defaults:\n  never_hedge_sheddable: !!bool yes\n", "defaults.never_hedge_sheddable"},
		{"defaults:\n  budget: {off: !!bool on}\n", "defaults.budget.off"},
		{"defaults:\n  idempotent: !!bool yes\n", "defaults.idempotent"},
		{"defaults:\n  breaker: !!bool no\n", "defaults.breaker"},
		{"operations:\n  a.example:\n    limit: !!bool off\n", `operations["a.example"].limit`},
	} {
		f, err := hedgeconfig.Parse("policy.yaml", []byte(tc.src))
		var e *hedgeconfig.Error
		if !errors.As(err, &e) || e.Field != tc.field || e.Line == 0 {
			var got any = err
			if err == nil {
				got = f.Defaults
				if len(f.Operations) > 0 {
					got = f.Operations[0]
				}
			}
			t.Errorf("Parse(%q) = %+v; want an error at %s", tc.src, got, tc.field)
		}
	}
	// The spellings the parser itself gives a boolean still read as they say, tag or none.
	for src, want := range map[string]bool{
		"defaults:\n  never_hedge_sheddable: !!bool true\n":  true,
		"defaults:\n  never_hedge_sheddable: !!bool FALSE\n": false,
		"defaults:\n  never_hedge_sheddable: True\n":         true,
	} {
		f, err := hedgeconfig.Parse("policy.yaml", []byte(src))
		if err != nil || f.Defaults.Policy.NeverHedgeSheddable != want {
			t.Errorf("Parse(%q) = %v; want never_hedge_sheddable %v", src, err, want)
		}
	}
	f, err := hedgeconfig.Parse("policy.yaml", []byte("defaults:\n  breaker: !!bool False\n  limit: !!bool true\n"))
	if err != nil || f.Defaults.Policy.Breaker != nil || f.Defaults.Policy.Limit == nil {
		t.Errorf("breaker: !!bool False, limit: !!bool true = %v; want the breaker off and the limit on", err)
	}
}
