"""Fine-tuning: the fiction/webtext mixture sampler and the DeepSpeed training loop."""
