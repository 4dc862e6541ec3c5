/* commands.h: the subcommands of costbench. Each returns 0, CB_EFAIL or CB_EUSAGE. */
#ifndef CB_COMMANDS_H
#define CB_COMMANDS_H

int cmd_peak(int argc, char **argv);
int cmd_matmul(int argc, char **argv);
int cmd_rope(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_dataset(int argc, char **argv);
int cmd_scale(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_allreduce(int argc, char **argv);
int cmd_trajectory(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_prices(int argc, char **argv);

#endif
