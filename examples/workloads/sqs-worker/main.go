// Command sqs-worker is an example queue worker that leaves no message
// behind when its pod is stopped: it long-polls an SQS queue for one
// message at a time, works on it, deletes it, and on SIGTERM (a drain, a
// scale-down, a spot interruption) stops receiving, finishes the message in
// hand, deletes it and exits — well within terminationGracePeriodSeconds
// when that is longer than the processing time.
//
//	sqs-worker --queue-url https://sqs.us-east-1.amazonaws.com/123456789012/work --processing-time 20s
//
// Every flag can be set through the environment variable named in its help.
// It prints one JSON line per event (received, deleted, stopping, exiting).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type config struct {
	queueURL       string
	endpoint       string
	region         string
	processingTime time.Duration
	waitTime       time.Duration
}

func main() {
	cfg, err := parse(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqs-worker:", err)
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		logEvent("error", map[string]any{"error": err.Error()})
		os.Exit(1)
	}
}

func parse(args []string, env func(string) string) (config, error) {
	fs := flag.NewFlagSet("sqs-worker", flag.ContinueOnError)
	var c config
	def := func(name, fallback string) string {
		if v := env(name); v != "" {
			return v
		}
		return fallback
	}
	fs.StringVar(&c.queueURL, "queue-url", def("QUEUE_URL", ""), "URL of the SQS queue to work off (env QUEUE_URL)")
	fs.StringVar(&c.endpoint, "endpoint", def("AWS_ENDPOINT_URL", ""), "SQS endpoint, for a simulated AWS (env AWS_ENDPOINT_URL)")
	fs.StringVar(&c.region, "region", def("AWS_REGION", "us-east-1"), "AWS region (env AWS_REGION)")
	processing, err := time.ParseDuration(def("PROCESSING_TIME", "5s"))
	if err != nil {
		return c, fmt.Errorf("PROCESSING_TIME: %w", err)
	}
	wait, err := time.ParseDuration(def("WAIT_TIME", "20s"))
	if err != nil {
		return c, fmt.Errorf("WAIT_TIME: %w", err)
	}
	fs.DurationVar(&c.processingTime, "processing-time", processing, "how long one message takes (env PROCESSING_TIME)")
	fs.DurationVar(&c.waitTime, "wait-time", wait, "long-poll wait of a receive, 0s to 20s (env WAIT_TIME)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.queueURL == "":
		return c, errors.New("--queue-url (QUEUE_URL) is required")
	case c.processingTime < 0:
		return c, errors.New("--processing-time must not be negative")
	case c.waitTime < 0 || c.waitTime > 20*time.Second:
		return c, errors.New("--wait-time must be between 0s and 20s")
	}
	return c, nil
}

func run(c config) error {
	// SIGTERM cancels receiving only; the message in hand is finished with
	// a context of its own.
	receiving, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background(), awsconfig.WithRegion(c.region))
	if err != nil {
		return fmt.Errorf("loading the AWS configuration: %w", err)
	}
	client := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if c.endpoint != "" {
			o.BaseEndpoint = aws.String(c.endpoint)
		}
	})
	// A message stays hidden while it is worked on, with room to spare.
	visibility := int32(max(30, 2*int(c.processingTime/time.Second)))
	go func() {
		<-receiving.Done()
		logEvent("stopping", map[string]any{"reason": "signal: no more receives; finishing the message in hand"})
	}()
	processed := 0
	logEvent("started", map[string]any{"queue": c.queueURL, "processingTime": c.processingTime.String()})
	for receiving.Err() == nil {
		out, err := client.ReceiveMessage(receiving, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(c.queueURL), MaxNumberOfMessages: 1,
			WaitTimeSeconds: int32(c.waitTime / time.Second), VisibilityTimeout: visibility,
		})
		if receiving.Err() != nil {
			break
		}
		if err != nil {
			logEvent("receive-failed", map[string]any{"error": err.Error()})
			sleep(receiving, time.Second)
			continue
		}
		for _, m := range out.Messages {
			logEvent("received", map[string]any{"messageId": aws.ToString(m.MessageId)})
			// The work: it is not interrupted by SIGTERM.
			time.Sleep(c.processingTime)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(c.queueURL), ReceiptHandle: m.ReceiptHandle})
			cancel()
			if err != nil {
				// Not deleted: it becomes visible again and another worker redoes it.
				logEvent("delete-failed", map[string]any{"messageId": aws.ToString(m.MessageId), "error": err.Error()})
				continue
			}
			processed++
			logEvent("deleted", map[string]any{"messageId": aws.ToString(m.MessageId), "body": aws.ToString(m.Body)})
		}
	}
	logEvent("exiting", map[string]any{"processed": processed})
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func logEvent(event string, fields map[string]any) {
	fields["event"] = event
	fields["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, _ := json.Marshal(fields)
	fmt.Println(string(b))
}
