package budget_test

import (
	"fmt"
	"time"

	"github.com/hedgekit/hedge/budget"
)

func ExampleBudget() {
	// The default budget: 10% of calls plus 1 per second, over 10 seconds.
	b, err := budget.New(budget.Config{})
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	// 200 calls arrive; each deposits once.
	for range 200 {
		b.Deposit(now)
	}
	fmt.Println("available:", b.Balance(now)) // 10 reserve + 200 × 0.10

	// A burst of 50 hedges: 30 are funded.
	funded := 0
	for range 50 {
		if b.TryWithdraw(now) {
			funded++
		}
	}
	fmt.Println("funded:", funded, "available:", b.Balance(now))

	// A window later the deposits and withdrawals have expired, and the
	// reserve is available again.
	fmt.Println("available later:", b.Balance(now.Add(10*time.Second)))
	// Output:
	// available: 30
	// funded: 30 available: 0
	// available later: 10
}

func ExampleConfig() {
	// A reserve-only budget: 0 would select the default Ratio, so ask for
	// none with budget.Zero.
	b, _ := budget.New(budget.Config{Ratio: budget.Zero, MinPerSecond: 0.2, Window: 10 * time.Second})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 1000 {
		b.Deposit(now)
	}
	fmt.Println("available:", b.Balance(now))

	// No budget at all must be chosen explicitly.
	u, _ := budget.New(budget.Config{Off: true})
	fmt.Println("unlimited:", u.Balance(now), u.TryWithdraw(now))
	// Output:
	// available: 2
	// unlimited: +Inf true
}

func ExampleConfig_Validate() {
	fmt.Println(budget.Config{Ratio: -1}.Validate())
	fmt.Println(budget.Config{Window: 500 * time.Millisecond}.Validate())
	// Output:
	// budget: Config.Ratio must be in [0, 1000], got -1
	// budget: Config.Window must be 0 (default 10s) or at least 1s, got 500ms
}
