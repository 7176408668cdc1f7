//go:build !linux

package workspace

// tmpHandle has no O_PATH here: the check is an lstat of the path.
type tmpHandle struct{}

func openTmpHandle(string, string) *tmpHandle { return nil }

func (*tmpHandle) intact(string) bool { return false }

func (*tmpHandle) close() {}

var wsTmpRel = ""
