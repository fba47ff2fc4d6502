package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/internal/ratelimit"
)

// maxResubmitSeqs bounds one resubmission from the console; larger ones
// are a command's job (`extractq dlq resubmit --run …`).
const maxResubmitSeqs = 20000

// resubmitForm is what the dead-letter pages ask to resubmit: letters by
// sequence, or a run's letters, optionally under another schema version or
// on another provider.
type resubmitForm struct {
	Seqs      []uint64
	Run       string
	Schema    string
	ToVersion int
	Provider  string
}

// parseResubmitForm reads the form from a query (the confirmation page) or
// a posted form (the resubmission): "seq" repeated or "seqs" comma-separated.
func parseResubmitForm(v url.Values) (resubmitForm, error) {
	f := resubmitForm{Run: v.Get("run"), Schema: strings.TrimSpace(v.Get("schema")), Provider: strings.TrimSpace(v.Get("provider"))}
	raw := v["seq"]
	if s := v.Get("seqs"); s != "" {
		raw = append(raw, strings.Split(s, ",")...)
	}
	for _, x := range raw {
		seq, err := strconv.ParseUint(strings.TrimSpace(x), 10, 64)
		if err != nil || seq == 0 {
			return f, fmt.Errorf("dead letter %q: want a sequence number from the list", x)
		}
		f.Seqs = append(f.Seqs, seq)
	}
	if len(f.Seqs) > maxResubmitSeqs {
		return f, fmt.Errorf("%d dead letters selected: the console resubmits at most %d at once; use `extractq dlq resubmit --run …` for more", len(f.Seqs), maxResubmitSeqs)
	}
	if len(f.Seqs) == 0 && !v.Has("run") {
		return f, errors.New("select dead letters, or choose a run whose letters to resubmit")
	}
	if s := strings.TrimSpace(v.Get("to_version")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return f, fmt.Errorf("schema version %q: want a whole number from 1", s)
		}
		f.ToVersion = n
	}
	return f, nil
}

func (f resubmitForm) request() submit.ResubmitRequest {
	return submit.ResubmitRequest{FromDLQ: true, Seqs: f.Seqs, Run: f.Run, Schema: f.Schema, ToVersion: f.ToVersion, Provider: f.Provider}
}

type confirmData struct {
	Form  resubmitForm
	Plan  fleetview.ResubmitPlan
	Shown []fleetview.PlanItem // the first letters, listed
	Seqs  string               // the plan's sequences, comma-separated, for the form
	// Unserved are the pools the jobs go to that no live worker serves.
	Unserved []string
}

// confirmResubmit says how many letters a resubmission would queue and
// what it would cost, and asks to confirm. The form it shows names the
// letters by sequence: what is confirmed is exactly what is queued, even if
// more letters arrive in the meantime.
func (s *Server) confirmResubmit(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	f, err := parseResubmitForm(r.URL.Query())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Nothing to resubmit", err.Error())
		return
	}
	if f.Provider != "" {
		if _, _, err := submit.ResolveProvider(f.Provider); err != nil {
			s.fail(w, r, http.StatusBadRequest, "Unknown provider", err.Error())
			return
		}
	}
	plan, err := fleetview.PlanResubmit(ctx, s.cfg.JS, f.request())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the dead letters", err.Error())
		return
	}
	if f.ToVersion > 0 && f.Schema == "" {
		// The letters' schema, when they share one.
		for _, it := range plan.Items {
			if f.Schema != "" && it.SchemaName != f.Schema {
				s.fail(w, r, http.StatusBadRequest, "Several schemas selected",
					"A newer schema version applies to one schema: select letters of one schema, or name it.")
				return
			}
			f.Schema = it.SchemaName
		}
		if plan, err = fleetview.PlanResubmit(ctx, s.cfg.JS, f.request()); err != nil {
			s.fail(w, r, http.StatusInternalServerError, "Cannot read the dead letters", err.Error())
			return
		}
	}
	if f.ToVersion > 0 {
		if _, err := s.cfg.Store.SchemaByName(ctx, f.Schema, f.ToVersion); err != nil {
			s.fail(w, r, http.StatusBadRequest, "No such schema version", err.Error())
			return
		}
	}
	if plan.Letters == 0 {
		s.fail(w, r, http.StatusNotFound, "Nothing to resubmit",
			"None of the selected dead letters is on the dead-letter stream any more: they were resubmitted or expired.")
		return
	}
	seqs := make([]string, len(plan.Seqs))
	for i, q := range plan.Seqs {
		seqs[i] = strconv.FormatUint(q, 10)
	}
	d := confirmData{Form: f, Plan: plan, Shown: plan.Items[:min(len(plan.Items), 100)], Seqs: strings.Join(seqs, ","), Unserved: s.unserved(ctx, plan.Providers)}
	s.render(w, r, http.StatusOK, "confirm", d)
}

// unserved lists the pools of providers that no live worker serves (by the
// heartbeats), each once: their jobs would wait until one starts. None
// when the heartbeats cannot be read.
func (s *Server) unserved(ctx context.Context, providers []string) []string {
	live, err := ratelimit.LiveMembers(ctx, s.cfg.JS, "")
	if err != nil {
		return nil
	}
	served := map[string]bool{}
	for spec := range live {
		served[jobs.PoolFor(spec)] = true
	}
	var out []string
	for _, p := range providers {
		if _, pool, err := submit.ResolveProvider(p); err == nil && !served[pool] && !slices.Contains(out, pool) {
			out = append(out, pool)
		}
	}
	return out
}

type resubmittedData struct {
	Form    resubmitForm
	Summary submit.ResubmitSummary
	Err     string
	Items   []fleetview.PlanItem // the letters queued (the first 100), to follow
}

// resubmit queues the confirmed letters again (through the same
// resubmission as `extractq dlq resubmit`) and removes them from the DLQ.
func (s *Server) resubmit(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	f, err := parseResubmitForm(r.PostForm)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Nothing to resubmit", err.Error())
		return
	}
	if len(f.Seqs) == 0 {
		s.fail(w, r, http.StatusBadRequest, "Nothing confirmed", "Resubmit from the confirmation page, which names the letters.")
		return
	}
	// What the letters are, read before they leave the stream, so the page
	// can link each document.
	plan, err := fleetview.PlanResubmit(ctx, s.cfg.JS, f.request())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "Cannot read the dead letters", err.Error())
		return
	}
	sum, err := submit.New(s.cfg.JS, s.cfg.Store).Resubmit(ctx, s.cfg.Store, f.request())
	d := resubmittedData{Form: f, Summary: sum, Items: plan.Items[:min(len(plan.Items), 100)]}
	status := http.StatusOK
	if err != nil {
		d.Err = err.Error()
		status = http.StatusInternalServerError
		s.cfg.Log.Error("console: resubmit", "err", err)
	}
	s.cfg.Log.Info("console: resubmitted dead letters", "selected", sum.Selected, "queued", sum.Queued, "removed", sum.Removed,
		"rejected", len(sum.Rejected), "provider", f.Provider, "schema", f.Schema, "to_version", f.ToVersion)
	s.render(w, r, status, "resubmitted", d)
}
