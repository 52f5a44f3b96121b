package cli

import (
	"github.com/spf13/cobra"

	"github.com/shipkey/shipkey/auth"
)

// fixedFlagValues are the flags whose values come from a fixed set, by
// name, wherever a command has them: their values complete (shell
// completion) as the labels of --key do.
func fixedFlagValues() map[string][]string {
	var grants, methods []string
	for _, g := range auth.Grants() {
		grants = append(grants, string(g))
	}
	for _, m := range auth.ClientAuthMethods() {
		methods = append(methods, string(m))
	}
	return map[string][]string{
		"grant":       grants,
		"client-auth": methods,
		"output":      tokenOutputs,
	}
}

// completeFixedValues registers the completion of every fixed-set flag on
// cmd and the commands under it.
func completeFixedValues(cmd *cobra.Command) {
	values := fixedFlagValues()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, vs := range values {
			if c.LocalNonPersistentFlags().Lookup(name) == nil {
				continue
			}
			vs := vs
			_ = c.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return vs, cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(cmd)
}
