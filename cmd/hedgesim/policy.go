package main

import (
	"flag"
	"path/filepath"
	"strings"

	"github.com/hedgekit/hedge"
	"github.com/hedgekit/hedge/hedgeconfig"
	"github.com/hedgekit/hedge/sim"
)

// policyFlags are -config and -operation: simulate exactly the policy a service loads from
// its hedgeconfig file, beside "no hedge".
type policyFlags struct {
	file, operation *string
}

// policySetup is the operation -config and -operation chose, as the setup to run.
type policySetup struct {
	name   string // the setup's name in the report: "OPERATION (FILE)"
	config hedge.Config
}

func addPolicyFlags(fs *flag.FlagSet) policyFlags {
	return policyFlags{
		file: fs.String("config", "", "simulate the policy of this hedgeconfig file (YAML or JSON), exactly as a service loads it,\n"+
			"beside \"no hedge\" (and any -setups named), or judged by -scorecard; every simulated call is repeatable"),
		operation: fs.String("operation", "", "the operation of -config to simulate, as the file names it (e.g. api.example.com/v1/search\nor /pkg.Service/Method); empty = the file's defaults"),
	}
}

// apply loads the chosen policy into cfg. Unless -setups was given, the policy runs beside
// "no hedge" alone; with -scorecard it is the setup judged.
func (p policyFlags) apply(fs *flag.FlagSet, cfg *config) error {
	if *p.file == "" {
		if *p.operation != "" {
			return usagef("-operation needs -config")
		}
		return nil
	}
	f, err := hedgeconfig.Load(*p.file)
	if err != nil {
		return usagef("-config: %v", err)
	}
	name := *p.operation
	if name == "" {
		name = hedgeconfig.DefaultsName
	}
	op, ok := f.Lookup(name)
	if !ok {
		return usagef("-operation: %s has no operation %q; it has: %s", *p.file, name,
			strings.Join(append([]string{hedgeconfig.DefaultsName}, f.Names()...), ", "))
	}
	setupsGiven := false
	fs.Visit(func(fl *flag.Flag) { setupsGiven = setupsGiven || fl.Name == "setups" })
	switch {
	case cfg.scorecard && setupsGiven:
		return usagef("-scorecard with -config judges the file's policy against no hedge: leave out -setups")
	case !cfg.scorecard && !setupsGiven:
		cfg.setups = []string{"no hedge"}
	}
	cfg.policy = &policySetup{name: op.Name + " (" + filepath.Base(*p.file) + ")", config: op.Policy}
	return nil
}

// withPolicy adds the chosen policy to sc as a setup of its own.
func (c config) withPolicy(sc sim.SweepConfig) sim.SweepConfig {
	if c.policy != nil {
		sc.Extra = append(sc.Extra, sim.Setup{Name: c.policy.name, Config: c.policy.config})
	}
	return sc
}

// candidate is the setup the scorecard judges in place of the one -setups names: the chosen
// policy, or none (a zero Setup) without -config.
func (c config) candidate() sim.Setup {
	if c.policy == nil {
		return sim.Setup{}
	}
	return sim.Setup{Name: c.policy.name, Config: c.policy.config}
}
