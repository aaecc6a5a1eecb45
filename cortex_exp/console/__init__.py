"""What a command shows on the terminal: tables (`tables`), progress bars (`progress`), the one
logging set-up (`logs`), every command's --help in one shape (`usage`)."""
