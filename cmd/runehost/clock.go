// clock.go holds the host clock the CLI hands to the machine.

package main

import "time"

func nowMillis() int64 { return time.Now().UnixMilli() }
