//go:build !linux

// confine_other.go: elsewhere than Linux a worker has no Landlock and no
// seccomp, so tools run only with the operator's acceptance of the risk.

package tool

// LandlockABI is 0: there is no Landlock here.
func LandlockABI() int { return 0 }

func confinable(withoutLandlock bool) error {
	if !withoutLandlock {
		return &Error{What: "confine", Msg: ErrNoLandlock.Error(), Err: ErrNoLandlock}
	}
	return nil
}

func limit() error                  { return nil }
func limitSpace(uint32) error       { return nil }
func limitCPU(uint64) (bool, error) { return false, nil }
func confine([]Mount, layers) error { return nil }
func closeInherited()               {}

const recvFlags = 0
