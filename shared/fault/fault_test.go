package fault

import (
	"errors"
	"fmt"
	"testing"
)

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Code
		show string
	}{
		{"nil", nil, "", "internal error"},
		{"plain error is internal", errors.New("dynamodb: throttled"), Internal, "internal error"},
		{"coded", New(ConfirmationUsed, "used"), ConfirmationUsed, "used"},
		{"wrapped", fmt.Errorf("redeem cf_1: %w", New(ConfirmationExpired, "expired")), ConfirmationExpired, "expired"},
		{"internal keeps its reason, hides its cause", Wrap(errors.New("secret table name"), "the store failed"), Internal, "the store failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(tt.err); got != tt.want {
				t.Errorf("CodeOf = %q, want %q", got, tt.want)
			}
			if tt.err != nil {
				if got := ReasonOf(tt.err); got != tt.show {
					t.Errorf("ReasonOf = %q, want %q", got, tt.show)
				}
			}
		})
	}
}

func TestAllKnownAndUnique(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range All() {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
		if !c.Known() {
			t.Errorf("%s not known", c)
		}
	}
	if Code("nope").Known() {
		t.Error("an unlisted code is known")
	}
}
