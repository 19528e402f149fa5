package rig

import "testing"

func TestLooksLikeSecretPrompt(t *testing.T) {
	for _, c := range []struct {
		out  string
		want bool
	}{
		{"Password:", true},
		{"password:\n", true},
		{"Password: ", true},
		{"[sudo] password for ann: ", true},
		{"Enter passphrase for key '/home/ann/.ssh/id_ed25519': ", true},
		{"Enter PIN: ", true},
		{"\x1b[1mAPI key\x1b[0m: ", true},
		{"Token? ", true},
		{"building...\nok\nPassword:\r\n", true},
		{"Password: \n\n", true},
		{"Name: ", false},
		{"password accepted\n", false},
		{"spinning: ", false},
		{"", false},
		{"Password:\nlogged in\n", false},
		{"Continue? [y/N] ", false},
	} {
		if got := LooksLikeSecretPrompt([]byte(c.out)); got != c.want {
			t.Errorf("LooksLikeSecretPrompt(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}
