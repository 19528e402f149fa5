package checkpoint

import "testing"

// Format's text, exactly: a header per change with what kind of change
// it is, then the patch or the summary.
func TestFormat(t *testing.T) {
	changes := []FileChange{
		{Path: "a.txt", Kind: Modified, OldKind: File, NewKind: File, OldMode: 0o644, NewMode: 0o644,
			Patch: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n"},
		{Path: "bin", Kind: Added, NewKind: File, NewMode: 0o600, Summary: "binary file, 3 bytes"},
		{Path: "tool", Kind: ModeChanged, OldKind: File, NewKind: File, OldMode: 0o644, NewMode: 0o755},
		{Path: "l", Kind: TypeChanged, OldKind: File, NewKind: Symlink, NewTarget: "a.txt"},
	}
	want := "diff a.txt (modified)\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n" +
		"diff bin (added, mode 0600)\nbinary file, 3 bytes\n" +
		"diff tool (mode changed, mode 0644 → 0755)\n" +
		"diff l (type changed, " + File.String() + " → " + Symlink.String() + ", link to a.txt)\n"
	if got := Format(changes); got != want {
		t.Errorf("Format:\n%s\nwant:\n%s", got, want)
	}
}
