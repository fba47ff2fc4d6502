package main

// The simulator is a provider family like any other: the command registers
// it, so "sim:PROFILE" works wherever a provider string is taken.
import _ "github.com/extractq/extractq/internal/sim/simprovider"
