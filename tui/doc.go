// Package tui is shipkey's Bubble Tea v2 face. See README.md in this folder
// for the house rules.
package tui
