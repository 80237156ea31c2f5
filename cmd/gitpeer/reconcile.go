package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitpeerv1alpha1 "github.com/gitpeer/gitpeer/apis/gitpeer/v1alpha1"
)

// defaultNamespace is the namespace of the install (config/default, the chart's
// default), used when -n is not given, as flux uses flux-system.
const defaultNamespace = "gitpeer-system"

// repoTargets holds the flags of reconcile, suspend and resume: kubectl's
// kubeconfig flags, the PeeringRepository (a name or --all) and --timeout.
type repoTargets struct {
	kube    *genericclioptions.ConfigFlags
	all     bool
	timeout time.Duration
}

// newRepoCmd completes cmd (reconcile, suspend or resume) with kubectl's
// flags, NAME or --all, --timeout when it waits for the agent, and a RunE
// that applies change to each PeeringRepository, saying done on stderr.
func newRepoCmd(cmd *cobra.Command, done string, waits bool, change func(*gitpeerv1alpha1.PeeringRepository) error) *cobra.Command {
	t := &repoTargets{kube: genericclioptions.NewConfigFlags(true)}
	*t.kube.Namespace = defaultNamespace
	t.kube.AddFlags(cmd.Flags())
	cmd.Flags().Lookup("namespace").Usage = "namespace of the PeeringRepositories"
	cmd.Flags().BoolVar(&t.all, "all", false, cmd.Name()+" every PeeringRepository of the namespace")
	if waits {
		cmd.Flags().DurationVar(&t.timeout, "timeout", 5*time.Minute, "how long to wait for the agent to handle the request")
	}
	cmd.Args = func(_ *cobra.Command, args []string) error {
		switch {
		case t.all && len(args) > 0:
			return errors.New("give a PeeringRepository name or --all, not both")
		case !t.all && len(args) != 1:
			return errors.New("give the name of one PeeringRepository, or --all")
		}
		return nil
	}
	cmd.ValidArgsFunction = t.completeNames
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return t.patch(cmd, args, done, change)
	}
	return cmd
}

// connect returns a client of the cluster and the namespace the flags select.
func (t *repoTargets) connect() (client.Client, string, error) {
	c, err := kubeClient(t.kube)
	if err != nil {
		return nil, "", err
	}
	ns, _, err := t.kube.ToRawKubeConfigLoader().Namespace()
	return c, ns, err
}

// resolve returns the named PeeringRepository, or with --all every one of the namespace.
func (t *repoTargets) resolve(ctx context.Context, args []string) (client.Client, []gitpeerv1alpha1.PeeringRepository, error) {
	c, ns, err := t.connect()
	if err != nil {
		return nil, nil, err
	}
	if !t.all {
		obj := gitpeerv1alpha1.PeeringRepository{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, &obj); err != nil {
			return nil, nil, err
		}
		return c, []gitpeerv1alpha1.PeeringRepository{obj}, nil
	}
	var list gitpeerv1alpha1.PeeringRepositoryList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil, fmt.Errorf("no PeeringRepository in namespace %q", ns)
	}
	return c, list.Items, nil
}

// completeNames completes the names of the PeeringRepositories of the namespace.
func (t *repoTargets) completeNames(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 || t.all {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, ns, err := t.connect()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var list gitpeerv1alpha1.PeeringRepositoryList
	if err := c.List(cmd.Context(), &list, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]cobra.Completion, 0, len(list.Items))
	for _, o := range list.Items {
		names = append(names, o.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// patch applies change to each object with a merge patch, then waits for the
// agent to handle the reconcile request change made, if any.
func (t *repoTargets) patch(cmd *cobra.Command, args []string, what string, change func(*gitpeerv1alpha1.PeeringRepository) error) error {
	ctx := cmd.Context()
	c, objs, err := t.resolve(ctx, args)
	if err != nil {
		return err
	}
	type request struct {
		obj       *gitpeerv1alpha1.PeeringRepository
		requested string
	}
	var (
		errs    []error
		waiting []request
	)
	for i := range objs {
		obj := &objs[i]
		before := obj.DeepCopy()
		if err := change(obj); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := c.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
			errs = append(errs, fmt.Errorf("PeeringRepository %s/%s: %w", obj.Namespace, obj.Name, err))
			continue
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%s PeeringRepository %s/%s\n", what, obj.Namespace, obj.Name)
		if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok && v != before.GetAnnotations()[meta.ReconcileRequestAnnotation] {
			waiting = append(waiting, request{obj, v})
		}
	}
	for _, r := range waiting {
		if err := t.wait(ctx, c, cmd.OutOrStdout(), cmd.ErrOrStderr(), r.obj, r.requested); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// requestReconcile sets the reconcile.fluxcd.io/requestedAt annotation, as flux reconcile does.
func requestReconcile(obj *gitpeerv1alpha1.PeeringRepository) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(a)
}

// wait polls obj until the agent has handled the reconcile request (its
// status.lastHandledReconcileAt is requested), then prints the Ready
// condition's message, or returns it as an error when it is not True.
func (t *repoTargets) wait(ctx context.Context, c client.Client, stdout, stderr io.Writer, obj *gitpeerv1alpha1.PeeringRepository, requested string) error {
	id := obj.Namespace + "/" + obj.Name
	fmt.Fprintf(stderr, "waiting for the agent to reconcile PeeringRepository %s\n", id)
	err := wait.PollUntilContextTimeout(ctx, time.Second, t.timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		return obj.Status.LastHandledReconcileAt == requested, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("PeeringRepository %s: the agent did not handle the reconcile request within --timeout %s (is an agent watching namespace %s?)", id, t.timeout, obj.Namespace)
	}
	if err != nil {
		return fmt.Errorf("PeeringRepository %s: %w", id, err)
	}
	ready := apimeta.FindStatusCondition(obj.Status.Conditions, meta.ReadyCondition)
	switch {
	case ready == nil:
		return fmt.Errorf("PeeringRepository %s: reconciled, but no Ready condition", id)
	case ready.Status != "True":
		return fmt.Errorf("PeeringRepository %s is not ready (%s): %s", id, ready.Reason, ready.Message)
	}
	_, err = fmt.Fprintf(stdout, "PeeringRepository %s reconciled: %s\n", id, ready.Message)
	return err
}

// errSuspended is the error of reconciling a suspended object, worded as flux's.
func errSuspended(obj *gitpeerv1alpha1.PeeringRepository) error {
	return fmt.Errorf("PeeringRepository %s/%s is suspended (spec.suspend): resume it with gitpeer resume %s -n %s", obj.Namespace, obj.Name, obj.Name, obj.Namespace)
}

func newReconcileCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile NAME | --all",
		Short: "Ask the agent to reconcile a PeeringRepository now and wait for it",
		Long: `reconcile sets the reconcile.fluxcd.io/requestedAt annotation of the PeeringRepository, as
flux reconcile does, and waits (--timeout) until the agent has handled it (its
status.lastHandledReconcileAt), then prints the Ready condition's message; it fails with that
message when Ready is not True. A suspended PeeringRepository is not reconciled: resume it.`,
		Example: `  gitpeer reconcile peering -n gitpeer-system
  gitpeer reconcile --all --timeout 2m`,
	}
	return newRepoCmd(cmd, "requested a reconcile of", true, func(obj *gitpeerv1alpha1.PeeringRepository) error {
		if obj.Spec.Suspend {
			return errSuspended(obj)
		}
		requestReconcile(obj)
		return nil
	})
}

func newSuspendCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suspend NAME | --all",
		Short: "Stop the agent from acting on a PeeringRepository (spec.suspend: true)",
		Long: `suspend sets spec.suspend of the PeeringRepository: the agent fetches, pushes, issues and
revokes nothing for it until it is resumed; what it already issued stays in place.`,
		Example: `  gitpeer suspend peering -n gitpeer-system`,
	}
	return newRepoCmd(cmd, "suspended", false, func(obj *gitpeerv1alpha1.PeeringRepository) error {
		obj.Spec.Suspend = true
		return nil
	})
}

func newResumeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resume NAME | --all",
		Short: "Resume a suspended PeeringRepository, reconcile it and wait for it",
		Long: `resume clears spec.suspend of the PeeringRepository, requests a reconcile as gitpeer
reconcile does, and waits (--timeout) until the agent has handled it, printing the Ready
condition's message; it fails with that message when Ready is not True.`,
		Example: `  gitpeer resume peering -n gitpeer-system`,
	}
	return newRepoCmd(cmd, "resumed", true, func(obj *gitpeerv1alpha1.PeeringRepository) error {
		obj.Spec.Suspend = false
		requestReconcile(obj)
		return nil
	})
}
