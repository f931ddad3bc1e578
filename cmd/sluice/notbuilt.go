package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// notBuiltCmd is a contract command whose capability has not landed yet:
// it is listed in --help and fails with a message saying so, never
// pretending to work.
type notBuiltCmd struct {
	use, short string
}

// notBuilt lists them; every contract command is built now.
var notBuilt = []notBuiltCmd{}

func (n notBuiltCmd) command() *cobra.Command {
	return &cobra.Command{
		Use:                n.use,
		Short:              n.short,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%s: not built yet in this version of sluice", cmd.Name())
		},
	}
}
